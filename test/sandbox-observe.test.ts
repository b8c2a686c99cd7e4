// What a tester reads off a sandbox and how it ends (issue 41): the broker's log lines
// (`sandbox.logs`), `await using` (Symbol.asyncDispose closes it), and the purpose of each mint in
// `platform.mints`, so a fault can hit the job's mint and spare the broker's own policy read.
import { describe, expect, it } from "@jest/globals";
import { isPolicyReaderMint, startSandbox } from "../server/sandbox/index.js";

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
