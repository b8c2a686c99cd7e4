// A sandbox that cannot start must not keep its test process alive: startSandbox rejects with one
// line naming the cause, after closing what it had opened (the simulator, the broker's app), so a
// process that catches the rejection exits on its own. The failed starts run in one child process
// (on the built package: `npx tsc -p tsconfig.build.json` first) that calls startSandbox for each
// case in turn, catches, prints the message and does nothing else: it must end on its own, so
// none of them left anything open (one process instead of three: about 0.9 s of CPU less). The
// busy port comes first, the only case that opens (and must close) something: the world's
// failures open nothing (checked before the simulator starts), and whatever a failed start left
// open stays open to the end whichever case it was. The CLI with the same inputs exits non-zero
// with one line.
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

/** The failed starts, in the order they run in one tester's process. */
const FAILED_STARTS = {
  busyPort: () => ({ port: busyPort }),
  badBase: () => ({ world: BAD_BASE }),
  listedTwice: () => ({ world: { organisation: "acme", repositories: [{ name: "rocket" }, { name: "Rocket" }] } }),
};
type FailedStart = keyof typeof FAILED_STARTS;

/** A tester's process: for each case start, catch, print the message; it must then end by itself. */
let failedStarts: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; outcomes: Record<string, unknown> }> | undefined;
function failedStart(name: FailedStart) {
  failedStarts ??= (async () => {
    const script = join(dir, "failed-starts.mjs");
    const cases = Object.entries(FAILED_STARTS).map(([key, options]) => [key, options()]);
    writeFileSync(script, `import { startSandbox } from ${JSON.stringify(TESTING)};
for (const [name, options] of ${JSON.stringify(cases)}) {
  try {
    await startSandbox(options);
    console.log(JSON.stringify({ [name]: { started: true } }));
  } catch (error) {
    console.log(JSON.stringify({ [name]: { message: error.message } }));
  }
}
`);
    const { code, signal, stdout, stderr } = await run(script, []);
    const outcomes = Object.assign({}, ...stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>));
    return { code, signal, stderr, outcomes };
  })();
  return failedStarts.then(({ outcomes, ...ended }) => ({ ...ended, outcome: outcomes[name] }));
}

describe("startSandbox rejects, and the process that caught it exits on its own", () => {
  it("a world that names a base branch it does not have", async () => {
    const { code, signal, stderr, outcome } = await failedStart("badBase");
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
    expect(outcome).toEqual({ message: "world: repositories[0].pullRequests[0].base: no branch dev in rocket (branches: main)" });
  });

  it("a world that lists one repository twice", async () => {
    const { code, signal, stderr, outcome } = await failedStart("listedTwice");
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
    expect(outcome).toEqual({ message: "world: repositories: rocket is listed twice" });
  });

  it("a port another process listens on: the simulator it had started is closed again", async () => {
    const { code, signal, stderr, outcome } = await failedStart("busyPort");
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
    expect(outcome).toEqual({ message: `broker: cannot listen on 127.0.0.1:${busyPort}: the port is in use (EADDRINUSE)` });
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
