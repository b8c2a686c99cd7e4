// A sandbox that cannot start must not keep its test process alive: startSandbox rejects with one
// line naming the cause, after closing what it had opened (the simulator, the broker's app), so a
// process that catches the rejection exits on its own. Each case runs in a child process (on the
// built package: `npx tsc -p tsconfig.build.json` first) that calls startSandbox, catches, prints
// the message and does nothing else; the CLI with the same inputs exits non-zero with one line.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = join(ROOT, "bin/tokensmith.js");
const TESTING = pathToFileURL(join(ROOT, "build/server/sandbox/index.js")).href;
/** Far above a start's few hundred ms: a child still running then is hung (killed, signal set). */
const HANG_BOUND_MS = 30_000;

const BAD_BASE = { organisation: "acme", repositories: [{ name: "rocket", pullRequests: [{ base: "dev" }] }] };

let dir: string;
let busy: Server;
let busyPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tokensmith-start-failures-"));
  busy = createServer();
  busyPort = await new Promise<number>((resolve) => busy.listen(0, "127.0.0.1", () => resolve((busy.address() as { port: number }).port)));
});
afterAll(async () => {
  await new Promise((resolve) => busy.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

function run(file: string, args: string[]) {
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(process.execPath, [file, ...args], { env: { PATH: process.env.PATH }, timeout: HANG_BOUND_MS }, (_error, stdout, stderr) => {
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr });
    });
  });
}

/** A tester's process: start, catch, print the message; it must then end by itself. */
async function startInChild(options: unknown) {
  const script = join(dir, `start-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(script, `import { startSandbox } from ${JSON.stringify(TESTING)};
try {
  await startSandbox(${JSON.stringify(options)});
  console.log(JSON.stringify({ started: true }));
} catch (error) {
  console.log(JSON.stringify({ message: error.message }));
}
`);
  return run(script, []);
}

describe("startSandbox rejects, and the process that caught it exits on its own", () => {
  it("a world that names a base branch it does not have", async () => {
    const { code, signal, stdout, stderr } = await startInChild({ world: BAD_BASE });
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
    expect(JSON.parse(stdout)).toEqual({ message: "world: repositories[0].pullRequests[0].base: no branch dev in rocket (branches: main)" });
  });

  it("a world that lists one repository twice", async () => {
    const { code, signal, stdout } = await startInChild({ world: { organisation: "acme", repositories: [{ name: "rocket" }, { name: "Rocket" }] } });
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(JSON.parse(stdout)).toEqual({ message: "world: repositories: rocket is listed twice" });
  });

  it("a port another process listens on: the simulator it had started is closed again", async () => {
    const { code, signal, stdout, stderr } = await startInChild({ port: busyPort });
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
    expect(JSON.parse(stdout)).toEqual({ message: `broker: cannot listen on 127.0.0.1:${busyPort}: the port is in use (EADDRINUSE)` });
  });

  it("the same process can start a sandbox after a failed start", async () => {
    const script = join(dir, "again.mjs");
    writeFileSync(script, `import { startSandbox } from ${JSON.stringify(TESTING)};
const messages = [];
try { await startSandbox({ port: ${busyPort} }); } catch (error) { messages.push(error.message); }
const sandbox = await startSandbox();
const oidcToken = await sandbox.mintJobToken();
const minted = await fetch(sandbox.brokerUrl + "/token", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken, owner: "octo-org", repo: "app" }) });
messages.push(minted.status);
await sandbox.close();
console.log(JSON.stringify(messages));
`);
    const { code, signal, stdout } = await run(script, []);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(JSON.parse(stdout)).toEqual([expect.stringContaining("EADDRINUSE"), 200]);
  });
});

describe("tokensmith sandbox: a start failure is one line and a non-zero exit", () => {
  it("--world with a pull request on a missing branch", async () => {
    const world = join(dir, "bad-base.json");
    writeFileSync(world, JSON.stringify(BAD_BASE));
    const { code, signal, stdout, stderr } = await run(BIN, ["sandbox", "--world", world]);
    expect({ code, signal, stdout }).toEqual({ code: 2, signal: null, stdout: "" });
    expect(stderr).toBe(`tokensmith sandbox: --world ${world}: world: repositories[0].pullRequests[0].base: no branch dev in rocket (branches: main)\n`);
  });

  it("--port that is taken", async () => {
    const { code, signal, stdout, stderr } = await run(BIN, ["sandbox", "--port", String(busyPort)]);
    expect({ code, signal, stdout }).toEqual({ code: 1, signal: null, stdout: "" });
    expect(stderr).toBe(`tokensmith sandbox: could not start: broker: cannot listen on 127.0.0.1:${busyPort}: the port is in use (EADDRINUSE)\n`);
  });
});
