// What a tester reads off a sandbox and how it ends (issue 41): the broker's log lines
// (`sandbox.logs`, at debug with `env: { LOG_LEVEL }`), `await using` (Symbol.asyncDispose closes
// it), the purpose of each mint in `platform.mints`, so a fault can hit the job's mint and spare
// the broker's own policy read, and `runAction({ env })` for the action's own settings
// (docs/sandbox.md#faults, docs/action.md#other-failures).
import { describe, expect, it } from "@jest/globals";
import { isPolicyReaderMint, startSandbox } from "../server/sandbox/index.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { keepLogs } from "./support/log-sink.js";

describe("sandbox.logs, mints' purpose, a fault on the job's mint only", () => {
  it("a job's run: a policy-reader mint then the job's; logs hold the broker's lines, no token", async () => {
    await using sandbox = await startSandbox();
    const run = await sandbox.runAction({ job: { repository: "octo-org/app" } });
    expect(run.exitCode).toBe(0);
    expect(sandbox.platform.mints.map((m) => [m.purpose, m.status])).toEqual([["policy-reader", 201], ["repositories", 201]]);
    expect(sandbox.platform.mints[1]!.repositories).toEqual(["app"]);
    expect(sandbox.logs.length).toBeGreaterThan(0);
    const lines = sandbox.logs.map((line) => JSON.parse(line) as { service?: string; msg?: string });
    expect(lines.every((line) => line.service === "tokensmith")).toBe(true);
    for (const line of sandbox.logs) expect(line).not.toContain(run.outputs.token!);
    // At the default level (info), no debug line.
    expect(lines.filter((line) => (line as { level?: string }).level === "debug")).toEqual([]);
  });

  it("env LOG_LEVEL=debug: sandbox.logs has a debug line per upstream call (the two mints among them), no token", async () => {
    await using sandbox = await startSandbox({ env: { LOG_LEVEL: "debug" } });
    const run = await sandbox.runAction({ job: { repository: "octo-org/app" } });
    expect(run.exitCode).toBe(0);
    const lines = sandbox.logs.map((line) => JSON.parse(line) as { level?: string; msg?: string; call?: string; method?: string; path?: string; status?: number });
    const calls = lines.filter((line) => line.level === "debug" && line.msg === "upstream call");
    expect(calls.filter((line) => line.call === "mint").map((line) => [line.method, line.path, line.status])).toEqual([
      ["POST", `/app/installations/${sandbox.installationId}/access_tokens`, 201],
      ["POST", `/app/installations/${sandbox.installationId}/access_tokens`, 201],
    ]);
    expect(calls.some((line) => line.call === "oidc_discovery" && line.status === 200)).toBe(true);
    expectNoSecrets(sandbox.logs, [run.outputs.token, sandbox.processTriggerSecret, sandbox.webhookSecret]);
    keepLogs(sandbox.logs);
  });

  it("a LOG_LEVEL pino does not have rejects the start, naming it", async () => {
    await expect(startSandbox({ env: { LOG_LEVEL: "verbose" } })).rejects.toThrow('env.LOG_LEVEL is not one of fatal, error, warn, info, debug, trace, silent: "verbose"');
  });

  it("a fault on access_tokens that spares the policy reader fails the job's mint alone", async () => {
    await using sandbox = await startSandbox();
    sandbox.simulator.faults.add({ method: "POST", path: /\/access_tokens$/, body: (body) => !isPolicyReaderMint(body), respond: { status: 403, body: { message: "Forbidden" } } });
    const run = await sandbox.runAction({ job: { repository: "octo-org/app" } });
    expect(run.exitCode).not.toBe(0);
    expect(sandbox.platform.mints.map((m) => [m.purpose, m.status])).toEqual([["policy-reader", 201], ["repositories", 403]]);
  });
});

it("await using: the sandbox is closed when the block ends", async () => {
  let brokerUrl: string;
  let platformUrl: string;
  {
    await using sandbox = await startSandbox();
    brokerUrl = sandbox.brokerUrl;
    platformUrl = sandbox.platformUrl;
    expect((await fetch(`${platformUrl}/oidc/.well-known/openid-configuration`)).status).toBe(200);
  }
  await expect(fetch(`${brokerUrl}/token`, { method: "POST" })).rejects.toThrow();
  await expect(fetch(`${platformUrl}/oidc/.well-known/openid-configuration`)).rejects.toThrow();
});

describe("runAction({ env }): more variables for the action's steps", () => {
  it("TOKENSMITH_RETRY_BASE_MS reaches the action: its retry after a 503 from the runner's ID-token endpoint waits 0 ms", async () => {
    await using sandbox = await startSandbox();
    sandbox.simulator.faults.add({ path: "/_actions/idtoken", times: 1, respond: { status: 503, body: { message: "Service Unavailable" } } });
    const run = await sandbox.runAction({ env: { TOKENSMITH_RETRY_BASE_MS: "0" } });
    expect(run.exitCode).toBe(0);
    expect(run.log.filter((line) => line.includes("retrying in"))).toEqual([expect.stringContaining("retrying in 0 ms (attempt 2 of 4)")]);
  });

  it("a variable set to undefined is left out: no ACTIONS_ID_TOKEN_REQUEST_URL is a job without id-token: write", async () => {
    await using sandbox = await startSandbox();
    const run = await sandbox.runAction({ env: { ACTIONS_ID_TOKEN_REQUEST_URL: undefined } });
    expect(run.exitCode).toBe(1);
    expect(run.log).toEqual([expect.stringMatching(/^::error::tokensmith: the runner offers this job no OIDC token: add `permissions: id-token: write`/)]);
    expect(sandbox.platform.requests).toEqual([]);
  });
});
