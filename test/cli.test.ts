// `tokensmith releases` (bin/tokensmith.js → build/server/cli) run as a child process against a
// broker over HTTP: the table, --json, and the broker's error codes as sentences. The cases about
// what the command makes of an answer (--json, the footer, each error code, a refused connection)
// call the same entry, runCli, in this process: the table, a refusal (exit 1), the usage errors
// (exit 2) and the rest of the usage stay child processes.
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ERROR_CODES } from "../shared/error-codes.js";
import { startBroker, type TestBroker } from "./support/broker.js";
import { cliInProcess } from "./support/cli-in-process.js";
import { getReleases, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";

const BIN = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));

let fx: ReleasesFixture;
let broker: TestBroker;

beforeAll(async () => {
  fx = await releasesFixture();
  fx.install("cli-org", ["api", "web", "docs", "tool"]);
  fx.sim.releases.add("cli-org/api", { tagName: "v1.2.0", createdAt: "2026-01-02T03:04:05Z" });
  fx.sim.releases.add("cli-org/web", { tagName: "v2.0.0-beta.1", isPrerelease: true, createdAt: "2026-02-02T00:00:00Z" });
  fx.sim.releases.add("cli-org/docs", { tagName: "v3.0.0", isDraft: true, createdAt: "2026-03-03T00:00:00Z" });
  broker = await startBroker({ ...fx.env, LEGACY_QUOTA_KV: "memory://" });
});
afterAll(async () => {
  await broker.close();
  await fx.sim.close();
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const SECRET_ENV = { TOKENSMITH_SECRET: TRIGGER_SECRET };

function cli(args: string[], env: Record<string, string | undefined> = SECRET_ENV) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe("tokensmith releases", () => {
  it("prints a table: repository, tag, published, draft/prerelease marks", async () => {
    const { code, stdout, stderr } = await cli(["releases", "--url", broker.url]);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^REPOSITORY\s+TAG\s+PUBLISHED\s+MARKS$/);
    expect(lines.slice(1, 5).map((line) => line.split(/\s{2,}/))).toEqual([
      ["cli-org/api", "v1.2.0", "2026-01-02T03:04:05Z"],
      ["cli-org/docs", "v3.0.0", "(unpublished)", "draft"],
      ["cli-org/tool", "-", "-", "no release"],
      ["cli-org/web", "v2.0.0-beta.1", "2026-02-02T00:00:00Z", "prerelease"],
    ]);
    expect(lines[5]).toBe("");
    expect(lines[6]).toMatch(/^4 repositories; generated at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/);
  });

  it("--json prints the broker's answer as it came", async () => {
    const { code, stdout } = await cliInProcess(["releases", "--url", `${broker.url}/`, "--json"], SECRET_ENV);
    expect(code).toBe(0);
    const printed = JSON.parse(stdout);
    const direct = await getReleases(broker.url);
    expect(printed).toEqual({ ...direct.body, cached: printed.cached });
    expect(Object.keys(printed).sort()).toEqual(["cached", "generated_at", "repos", "truncated"]);
  });

  it("says a cached or incomplete aggregate in the footer", async () => {
    broker.env.RELEASES_MAX_REPOSITORIES = "2";
    try {
      await getReleases(broker.url);
      const { stdout } = await cliInProcess(["releases", "--url", broker.url], SECRET_ENV);
      expect(stdout).toContain("2 repositories; generated at");
      expect(stdout).toContain("(from the broker's cache)");
      expect(stdout).toContain("Incomplete: the broker reached a traversal cap");
    } finally {
      delete broker.env.RELEASES_MAX_REPOSITORIES;
    }
  });

  it("turns a wrong secret into a sentence (unauthorized)", async () => {
    const { code, stdout, stderr } = await cli(["releases", "--url", broker.url], { TOKENSMITH_SECRET: "wrong" });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toBe(`tokensmith: ${ERROR_CODES.unauthorized.meaning} TOKENSMITH_SECRET must be the broker's PROCESS_TRIGGER_SECRET. (HTTP 401 unauthorized)\n`);
  });

  it.each([
    ["releases_disabled", { PROCESS_TRIGGER_SECRET: undefined }],
    ["app_unconfigured", { HOST_APP_ID: undefined }],
  ] as Array<["releases_disabled" | "app_unconfigured", Record<string, undefined>]>)("turns %s into the shared table's meaning and hint", async (codeName, change) => {
    const saved = { ...broker.env };
    Object.assign(broker.env, change);
    try {
      const { code, stderr } = await cliInProcess(["releases", "--url", broker.url], SECRET_ENV);
      expect(code).toBe(1);
      expect(stderr).toBe(`tokensmith: ${ERROR_CODES[codeName].meaning} ${ERROR_CODES[codeName].hint} (HTTP 503 ${codeName})\n`);
    } finally {
      Object.assign(broker.env, saved);
    }
  });

  it("explains a missing secret, a missing --url and an unreachable broker", async () => {
    // Independent: run at once (each process is mostly Node's start-up).
    const closed = await closedPort();
    const [noSecret, noUrl, down] = await Promise.all([
      cli(["releases", "--url", broker.url], {}),
      cli(["releases"]),
      cliInProcess(["releases", "--url", `http://127.0.0.1:${closed}`], SECRET_ENV),
    ]);
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toContain("set TOKENSMITH_SECRET");
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain("--url is required");
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(`tokensmith: could not reach the broker at http://127.0.0.1:${closed} (ECONNREFUSED).\n`);
  });
});

describe("tokensmith usage", () => {
  it("--help names every command: serve, doctor, releases, dashboard and sandbox", async () => {
    const { code, stdout } = await cli(["--help"]);
    expect(code).toBe(0);
    expect(stdout).toContain("tokensmith serve");
    expect(stdout).toContain("tokensmith doctor");
    expect(stdout).toContain("tokensmith releases --url URL [--json]");
    expect(stdout).toContain("tokensmith dashboard --broker URL");
    expect(stdout).toContain("tokensmith sandbox");
  });

  it("an unknown command, or serve/doctor with arguments: exit 2 with the usage", async () => {
    const runs = await Promise.all([["frobnicate"], ["serve", "now"], ["doctor", "--json"]].map((args) => cli(args)));
    for (const { code, stderr } of runs) {
      expect(code).toBe(2);
      expect(stderr).toContain("Usage: tokensmith serve");
    }
  });
});

describe("tokensmith as a command-line tool", () => {
  it("--version (and -v) prints the package's version", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    for (const flag of ["--version", "-v"]) expect(await cli([flag], {})).toEqual({ code: 0, stdout: `tokensmith ${version}\n`, stderr: "" });
  });

  it("stops quietly when its reader has closed the pipe (doctor | head): exit 0, no EPIPE stack trace", async () => {
    // The reader is gone before doctor writes its first line: the read end of its stdout is closed
    // as soon as it is spawned, so every write fails with EPIPE (Node ignores SIGPIPE). Without the
    // handler in server/cli/main.ts the first write's error is unhandled: a stack trace and exit 1.
    const child = spawn(process.execPath, [BIN, "doctor"], { env: { PATH: process.env.PATH }, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout!.destroy();
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once("close", (exitCode, exitSignal) => resolve([exitCode, exitSignal])));
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: "" });
  }, 20_000);
});

