// The broker's default log destination (createLogger without one): pino's synchronous writer on
// stdout, so a line is written when it is logged, in order and whole, whatever ends the process
// next, and a process that makes many loggers (a test, the bench) adds no listener per logger.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";
import { createLogger } from "../server/log.js";

const LOG = fileURLToPath(new URL("../build/server/log.js", import.meta.url));

/** Runs `body` in a fresh Node process with the built createLogger imported; its stdout lines. */
function run(body: string): { status: number | null; lines: string[] } {
  const script = `import { createLogger } from ${JSON.stringify(LOG)};\n${body}`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
  return { status: child.status, lines: child.stdout.split("\n").filter(Boolean) };
}

it("carries pino's lines whole and in order under many writes in one turn", () => {
  const { status, lines } = run(`const log = createLogger();\nfor (let i = 0; i < 1000; i += 1) log.info({ i, route: "/token" }, "request");`);
  expect(status).toBe(0);
  const parsed = lines.map((line) => JSON.parse(line) as { i: number; msg: string });
  expect(parsed.map((l) => l.i)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  expect(parsed.every((l) => l.msg === "request")).toBe(true);
});

it("has written a line before the turn ends: process.exit() right after it loses nothing", () => {
  const { status, lines } = run(`createLogger().info("last words");\nprocess.exit(3);`);
  expect(status).toBe(3);
  expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(["last words"]);
});

it("has written a line when an uncaught exception ends the process", () => {
  const { status, lines } = run(`createLogger().info("before the throw");\nthrow new Error("boom");`);
  expect(status).toBe(1);
  expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(["before the throw"]);
});

it("adds no exit listener however many loggers a process makes", () => {
  const listeners = process.listenerCount("exit");
  for (let i = 0; i < 20; i += 1) createLogger();
  expect(process.listenerCount("exit")).toBe(listeners);
});
