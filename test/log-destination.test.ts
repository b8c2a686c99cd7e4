// The broker's default log destination: the lines of one event-loop turn, written together.
import { closeSync, mkdtempSync, openSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "@jest/globals";
import { createTurnWriter } from "../server/log-destination.js";
import { createLogger } from "../server/log.js";

const dir = mkdtempSync(join(tmpdir(), "tokensmith-log-"));
let fd: number | undefined;
afterEach(() => {
  if (fd !== undefined) closeSync(fd);
  fd = undefined;
});

function logFile(name: string) {
  const path = join(dir, name);
  fd = openSync(path, "w");
  return { read: () => readFileSync(path, "utf8"), writer: createTurnWriter(fd) };
}

it("writes a turn's lines, in order, once the turn ends", async () => {
  const { read, writer } = logFile("turn.log");
  writer.write("one\n");
  writer.write("two\n");
  expect(read()).toBe("");
  await new Promise((resolve) => setImmediate(resolve));
  expect(read()).toBe("one\ntwo\n");
  writer.write("three\n");
  await new Promise((resolve) => setImmediate(resolve));
  expect(read()).toBe("one\ntwo\nthree\n");
});

it("writes what is pending at once on flushSync", () => {
  const { read, writer } = logFile("flush.log");
  writer.write("pending\n");
  writer.flushSync();
  expect(read()).toBe("pending\n");
  writer.flushSync();
  expect(read()).toBe("pending\n");
});

it("carries pino's lines whole under many writes in one turn", async () => {
  const { read, writer } = logFile("pino.log");
  const log = createLogger({ destination: writer });
  for (let i = 0; i < 1000; i += 1) log.info({ i, route: "/token" }, "request");
  await new Promise((resolve) => setImmediate(resolve));
  const lines = read().trimEnd().split("\n").map((line) => JSON.parse(line) as { i: number; msg: string });
  expect(lines.map((l) => l.i)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  expect(lines.every((l) => l.msg === "request")).toBe(true);
});

it("is one writer per descriptor, with one exit listener, however many loggers use it", () => {
  const { read, writer } = logFile("shared.log");
  const listeners = process.listenerCount("exit");
  const again = createTurnWriter(fd);
  for (let i = 0; i < 20; i += 1) createLogger({ destination: createTurnWriter(fd) });
  expect(again).toBe(writer);
  expect(process.listenerCount("exit")).toBe(listeners);
  again.write("one turn\n");
  writer.flushSync();
  expect(read()).toBe("one turn\n");
});
