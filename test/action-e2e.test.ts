// End to end, as the runner runs it: the bundled dist/main and dist/post in child processes, with
// INPUT_* variables, GITHUB_OUTPUT / GITHUB_STATE files and STATE_* variables (support/action-runner.ts),
// the simulator's ID-token endpoint, and the real broker in-process.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "@jest/globals";
import { expectNoSecrets } from "./support/fixtures.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { runnerJobEnv } from "./support/runner-env.js";
import { ACTION_YML, actionInputs, runStep, type StepResult } from "./support/action-runner.js";
import { closedPortUrl, startStubServer, type StubServer } from "./support/action-stub-server.js";

let stubs: StubServer[] = [];

const t = brokerPerTest();
afterEach(async () => {
  await Promise.all(stubs.map((stub) => stub.close()));
  stubs = [];
});

const jobEnv = () => ({
  ...runnerJobEnv(t.fx.sim),
  // Operator/test tuning of the backoff base (see action/main.ts): keeps the retry test quick.
  TOKENSMITH_RETRY_BASE_MS: "10",
});

const runMain = (inputs: Record<string, string> = {}, env: Record<string, string | undefined> = {}) =>
  runStep("main", { inputs: { "auth-mode": "public-app", "broker-url": t.broker.url, ...inputs }, env: { ...jobEnv(), ...env } });

const tokenCalls = () =>
  t.broker.logs
    .map((line) => JSON.parse(line) as { msg?: string; route?: string; status?: number; code?: string })
    .filter((entry) => entry.msg === "request" && entry.route === "/token")
    .map((entry) => (entry.code ? `${entry.status} ${entry.code}` : String(entry.status)));

const revocations = () => t.fx.sim.requests.filter((r) => r.method === "DELETE" && r.path === "/installation/token");

/** `::add-mask::X` comes before any other line that contains X, and X appears nowhere else in the log. */
function expectMaskedFirst(step: StepResult, secret: string): void {
  const mask = step.lines.indexOf(`::add-mask::${secret}`);
  expect(mask).toBeGreaterThanOrEqual(0);
  expect(step.lines.findIndex((line) => line.includes(secret))).toBe(mask);
  expectNoSecrets(step.lines.filter((line) => !line.startsWith("::add-mask::")), [secret]);
}

const errorLine = (step: StepResult) => step.lines.find((line) => line.startsWith("::error::"));

describe("action.yml", () => {
  it("declares the inputs and outputs of the issue and runs dist/ on node24", () => {
    const text = readFileSync(ACTION_YML, "utf8");
    expect(actionInputs(text)).toEqual([
      { name: "auth-mode", required: true },
      { name: "broker-url", required: false },
      { name: "broker-fallback-url", required: false, default: "" },
      { name: "oidc-audience", required: false, default: "tokensmith" },
      { name: "skip-token-revoke", required: false, default: "false" },
    ]);
    expect(text).toMatch(/^outputs:\n {2}token:\n[\s\S]*^ {2}expires-at:\n[\s\S]*^ {2}repository:\n/m);
    expect(text).toMatch(/^runs:\n {2}using: node24\n {2}main: dist\/main\/index\.js\n {2}post: dist\/post\/index\.js\n/m);
  });

  it("has every input and output in the README's tables", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    for (const input of actionInputs()) expect(readme).toMatch(new RegExp(`^\\| \`${input.name}\` \\| ${input.required ? "yes" : "(?!yes)[^|]*"} \\|`, "m"));
    for (const output of ["token", "expires-at", "repository"]) expect(readme).toMatch(new RegExp(`^\\| \`${output}\` \\| `, "m"));
  });
});

describe("the bundled main and post steps", () => {
  it("main puts a masked token in the outputs; post revokes it (the platform sees the DELETE, the token is dead)", async () => {
    const main = await runMain();
    expect(main.exitCode).toBe(0);
    const token = main.outputs.token!;
    expect(t.fx.sim.tokens.get(token)?.repositories).toEqual(["app"]);
    expect(main.outputs.repository).toBe("octo-org/app");
    expect(main.outputs["expires-at"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expectMaskedFirst(main, token);
    const [jwt] = main.lines.filter((l) => l.startsWith("::add-mask::eyJ")).map((l) => l.slice("::add-mask::".length));
    expectMaskedFirst(main, jwt!);
    expect(main.state).toEqual({ token, "expires-at": main.outputs["expires-at"] });
    expect(main.lines).toContain(`tokensmith: got a token for octo-org/app, expires at ${main.outputs["expires-at"]}`);

    const post = await runStep("post", { env: jobEnv(), state: main.state });
    expect(post.exitCode).toBe(0);
    expect(revocations()).toHaveLength(1);
    expect(revocations()[0]!.auth).toEqual({ kind: "installation", token });
    expect(t.fx.sim.tokens.get(token)!.revoked).toBe(true);
    expect(post.lines).toEqual(["tokensmith: token revoked"]);
  });

  it("skip-token-revoke: true saves no token for post, and post leaves the token alive", async () => {
    const main = await runMain({ "skip-token-revoke": "true" });
    expect(main.exitCode).toBe(0);
    const token = main.outputs.token!;
    expect(main.state).toEqual({});
    const post = await runStep("post", { inputs: { "skip-token-revoke": "true" }, env: jobEnv(), state: main.state });
    expect(post.exitCode).toBe(0);
    expect(revocations()).toHaveLength(0);
    expect(t.fx.sim.tokens.get(token)!.revoked).toBe(false);
    expect(post.lines).toEqual(["tokensmith: token revocation skipped (skip-token-revoke: true)"]);
  });

  it("falls back when the primary is on a closed port, and succeeds", async () => {
    const primary = await closedPortUrl();
    const main = await runMain({ "broker-url": primary, "broker-fallback-url": t.broker.url });
    expect(main.exitCode).toBe(0);
    expect(t.fx.sim.tokens.has(main.outputs.token!)).toBe(true);
    expect(tokenCalls()).toEqual(["200"]);
    expect(main.lines.some((line) => line.startsWith(`tokensmith: attempt 1: ${primary} is unreachable (`))).toBe(true);
  });

  it("fails on a 401 with the code and reason, and never calls the fallback", async () => {
    const fallback = await startStubServer(() => ({ status: 500, body: "{}" }));
    stubs.push(fallback);
    const main = await runMain({ "oidc-audience": "not-the-broker", "broker-fallback-url": fallback.url });
    expect(main.exitCode).toBe(1);
    expect(tokenCalls()).toEqual(["401 invalid_oidc_token"]);
    expect(fallback.requests).toHaveLength(0);
    expect(main.outputs).toEqual({});
    expect(errorLine(main)).toContain("(error: invalid_oidc_token, reason: audience_mismatch, HTTP 401");
    expect(errorLine(main)).toContain(`oidc-audience input ("not-the-broker") and the broker's OIDC_AUDIENCE disagree`);
  });

  it("retries a 503 oidc_key_fetch_failed and succeeds", async () => {
    t.fx.sim.faults.add({ method: "GET", path: "/oidc/.well-known/openid-configuration", times: 1, respond: { status: 500, body: { message: "down" } } });
    const main = await runMain();
    expect(main.exitCode).toBe(0);
    expect(tokenCalls()).toEqual(["503 oidc_key_fetch_failed", "200"]);
    expect(main.lines).toContain(`tokensmith: attempt 1: ${t.broker.url} answered 503 oidc_key_fetch_failed (jwks_unavailable)`);
    expect(main.lines).toContain("tokensmith: retrying in 10 ms (attempt 2 of 4)");
    expect(main.lines.filter((l) => l.startsWith("::add-mask::eyJ"))).toHaveLength(2); // a fresh OIDC token per attempt
    expectMaskedFirst(main, main.outputs.token!);
  });

  it("without id-token: write fails with the fix and calls no one", async () => {
    const main = await runMain({}, { ACTIONS_ID_TOKEN_REQUEST_URL: undefined, ACTIONS_ID_TOKEN_REQUEST_TOKEN: undefined });
    expect(main.exitCode).toBe(1);
    expect(errorLine(main)).toContain("add `permissions: id-token: write` to the job");
    expect(tokenCalls()).toEqual([]);
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("fails with one line naming the supported modes for another auth-mode", async () => {
    const main = await runMain({ "auth-mode": "app-secret" });
    expect(main.exitCode).toBe(1);
    expect(main.lines).toEqual(['::error::tokensmith: auth-mode "app-secret" is not supported; supported modes: public-app.']);
  });
});
