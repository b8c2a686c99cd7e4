// Issue 24 item 7: `tokensmith dashboard` (the CLI, a child process) treats every spelling of a
// loopback address as loopback — when told where to listen (`--host 127.1`, `::ffff:127.0.0.1`)
// and in the Host header it answers to — and nothing else. Before, `--host 127.1` was taken for a
// public address: a warning, and no Host check at all (a DNS-rebinding page could read the
// releases through it).
import { afterEach, describe, expect, it } from "@jest/globals";
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { isLoopbackHost, isLoopbackHostHeader } from "../shared/loopback-address.js";
import { rawRequest } from "./support/raw-request.js";

const BIN = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));
const running: ChildProcess[] = [];

afterEach(async () => {
  for (const child of running.splice(0)) {
    if (child.exitCode !== null) continue;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
});

/** Starts the dashboard on --host `host`, a free port; resolves with the port and what it wrote to stderr. */
async function dashboard(host: string): Promise<{ port: number; stderr: () => string }> {
  // The broker is never asked in these tests (no /api/releases request): a closed loopback port.
  const child = spawn(process.execPath, [BIN, "dashboard", "--broker", "http://127.0.0.1:9", "--host", host, "--port", "0"], {
    env: { PATH: process.env.PATH, TOKENSMITH_SECRET: "dashboard-loopback-secret-0123456789abcdef" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  let err = "";
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /tokensmith dashboard: http:\/\/\S+:(\d+)\//.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`dashboard exited ${code}: ${out}${err}`)));
  });
  return { port, stderr: () => err };
}

/** GET / on 127.0.0.1:port with this Host header: 200 (the page) or 421 (misdirected). */
async function pageWithHost(port: number, host: string): Promise<number> {
  return (await rawRequest(`http://127.0.0.1:${port}`, { method: "GET", path: "/", headers: { host } })).status;
}

describe("dashboard --host, spelled as loopback", () => {
  it.each(["127.1", "::ffff:127.0.0.1", "127.0.0.1"])("--host %s: no public-address warning, the Host check on", async (host) => {
    const { port, stderr } = await dashboard(host);
    // Every spelling of this machine's loopback and this port is answered…
    for (const name of ["127.0.0.1", "127.1", "localhost", "[::ffff:127.0.0.1]", "2130706433"]) expect([name, await pageWithHost(port, `${name}:${port}`)]).toEqual([name, 200]);
    // …a name (what a DNS-rebinding page sends), another port or a Host with more in it is not.
    for (const name of [`attacker.example:${port}`, `127.0.0.1.nip.io:${port}`, `127.0.0.1:${port + 1}`, `x@127.0.0.1:${port}`, `[::ffff:10.0.0.1]:${port}`]) expect([name, await pageWithHost(port, name)]).toEqual([name, 421]);
    expect(stderr()).not.toContain("anyone who can reach it");
  });

  it("--host 0.0.0.0 is not loopback: warned, and any Host is answered (as before)", async () => {
    const { port, stderr } = await dashboard("0.0.0.0");
    expect(await pageWithHost(port, `attacker.example:${port}`)).toBe(200);
    expect(stderr()).toContain("tokensmith: listening on 0.0.0.0: anyone who can reach it sees the releases.");
  });
});

describe("isLoopbackHost", () => {
  it.each([
    ["127.1", true],
    ["0x7f.1", true],
    ["0177.0.0.1", true],
    ["2130706433", true],
    ["127.255.255.254", true],
    ["::1", true],
    ["[0:0:0:0:0:0:0:1]", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:7f00:1", true],
    ["LOCALHOST.", true],
    ["0.0.0.0", false],
    ["::", false],
    ["10.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["localhost.example", false],
    ["127.0.0.1.nip.io", false],
    ["evil@127.0.0.1", false],
    ["", false],
  ])("%s → %s", (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });

  it("a Host header without a port is port 80", () => {
    expect(isLoopbackHostHeader("127.0.0.1", 80)).toBe(true);
    expect(isLoopbackHostHeader("127.0.0.1", 8081)).toBe(false);
    expect(isLoopbackHostHeader(undefined, 80)).toBe(false);
  });
});
