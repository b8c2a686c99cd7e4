// `npm test`'s pretest (scripts/test-prerequisites.js): with a prerequisite missing and no way to
// install it (no apt-get on PATH), it stops in one line per missing tool that names the package.
// Each case runs the script with a PATH of its own: links to the tools it is meant to find.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "@jest/globals";

const SCRIPT = fileURLToPath(new URL("../scripts/test-prerequisites.js", import.meta.url));
const ALL = ["sh", "redis-server", "redis-cli", "ip", "unshare", "nsenter", "tar", "unzip", "git", "openssl", "gh", "softhsm2-util", "pkcs11-tool"];
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

// Where each tool is, looked up once for the file (a shell each: 13 tools in 8 cases were 104).
const found = new Map<string, string>();
function which(tool: string): string {
  if (!found.has(tool)) found.set(tool, spawnSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim());
  const path = found.get(tool)!;
  if (!path) throw new Error(`this machine has no ${tool} to link`);
  return path;
}

function runWith(tools: string[], env: Record<string, string> = {}): { status: number | null; lines: string[] } {
  const bin = mkdtempSync(join(tmpdir(), "tokensmith-prereq-"));
  dirs.push(bin);
  for (const tool of tools) symlinkSync(which(tool), join(bin, tool));
  const run = spawnSync(process.execPath, [SCRIPT], { env: { PATH: bin, ...env }, encoding: "utf8" });
  const lines = `${run.stdout}${run.stderr}`.split("\n").filter((line) => line !== "" && !line.includes("warning: Node.js"));
  return { status: run.status, lines };
}

describe("npm test's prerequisites", () => {
  it("passes silently when every tool is on PATH", () => {
    expect(runWith(ALL)).toEqual({ status: 0, lines: [] });
  });

  it("without redis-server: one line naming the package, exit 1", () => {
    expect(runWith(ALL.filter((tool) => tool !== "redis-server" && tool !== "redis-cli"))).toEqual({
      status: 1,
      lines: [expect.stringMatching(/^tokensmith tests: `redis-server` is not on PATH \(.*\): install redis-server \(Debian\/Ubuntu: (sudo )?apt-get install redis-server\)$/)],
    });
  });

  it("without redis-server but with TOKENSMITH_TEST_REDIS_URL set: passes (that Redis is used)", () => {
    expect(runWith(ALL.filter((tool) => !tool.startsWith("redis")), { TOKENSMITH_TEST_REDIS_URL: "redis://127.0.0.1:1" })).toEqual({ status: 0, lines: [] });
  });

  it("without ip: one line naming iproute2", () => {
    expect(runWith(ALL.filter((tool) => tool !== "ip"))).toEqual({
      status: 1,
      lines: [expect.stringMatching(/^tokensmith tests: `ip` is not on PATH \(.*\): install iproute2 \(Debian\/Ubuntu: (sudo )?apt-get install iproute2\)$/)],
    });
  });

  it("without gh: one line naming gh", () => {
    expect(runWith(ALL.filter((tool) => tool !== "gh"))).toEqual({
      status: 1,
      lines: [expect.stringMatching(/^tokensmith tests: `gh` is not on PATH \(.*\): install gh \(Debian\/Ubuntu: (sudo )?apt-get install gh\)$/)],
    });
  });

  it("without unzip: one line naming unzip", () => {
    expect(runWith(ALL.filter((tool) => tool !== "unzip"))).toEqual({
      status: 1,
      lines: [expect.stringMatching(/^tokensmith tests: `unzip` is not on PATH \(.*\): install unzip \(Debian\/Ubuntu: (sudo )?apt-get install unzip\)$/)],
    });
  });

  it("without openssl: one line naming openssl", () => {
    expect(runWith(ALL.filter((tool) => tool !== "openssl"))).toEqual({
      status: 1,
      lines: [expect.stringMatching(/^tokensmith tests: `openssl` is not on PATH \(.*\): install openssl \(Debian\/Ubuntu: (sudo )?apt-get install openssl\)$/)],
    });
  });

  it("without softhsm2-util or pkcs11-tool: one line each naming softhsm2 and opensc", () => {
    expect(runWith(ALL.filter((tool) => tool !== "softhsm2-util" && tool !== "pkcs11-tool"))).toEqual({
      status: 1,
      lines: [
        expect.stringMatching(/^tokensmith tests: `softhsm2-util` is not on PATH \(.*\): install softhsm2 \(Debian\/Ubuntu: (sudo )?apt-get install softhsm2\)$/),
        expect.stringMatching(/^tokensmith tests: `pkcs11-tool` is not on PATH \(.*\): install opensc \(Debian\/Ubuntu: (sudo )?apt-get install opensc\)$/),
      ],
    });
  });
});
