// The action's logic wired together in-process: run() and post() with a recording toolkit and the
// real HTTP client, against the real broker app (Express on an ephemeral port) and the simulator.
import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { createHttp } from "../action/http.js";
import { run } from "../action/run.js";
import { post } from "../action/revoke-token.js";
import type { Env } from "../action/toolkit.js";
import { WORKFLOW_HINTS } from "../action/hints.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { DEFAULT_SHA } from "../simulator/index.js";
import { recordingToolkit, type RecordingToolkit } from "./support/action-toolkit.js";
import { runnerJobEnv } from "./support/runner-env.js";
import { closedPortUrl, startStubServer, type StubServer } from "./support/action-stub-server.js";

const stubs: StubServer[] = [];
const toolkits: RecordingToolkit[] = [];

const t = brokerPerTest();
beforeEach(() => {
  t.fx.sim.actions.claims = {};
});
afterEach(async () => {
  await Promise.all(stubs.splice(0).map((stub) => stub.close()));
  // Nothing the action logged may show a token or a JWT it handled.
  for (const core of toolkits.splice(0)) {
    const masked = core.events.flatMap((e) => (e.type === "mask" ? [e.value] : []));
    expectNoSecrets([...core.messages(), ...t.broker.logs], masked);
  }
});

const jobEnv = (): Env => runnerJobEnv(t.fx.sim);

async function runAction(inputs: Record<string, string> = {}, env: Env = {}, options: { timeoutMs?: number } = {}) {
  const fullEnv = { ...jobEnv(), ...env };
  const core = recordingToolkit({ inputs: { "auth-mode": "public-app", "broker-url": t.broker.url, ...inputs }, env: fullEnv });
  toolkits.push(core);
  const sleeps: number[] = [];
  await run({
    core,
    env: fullEnv,
    http: createHttp({ timeoutMs: options.timeoutMs ?? 5000 }),
    retry: { attempts: 3, baseDelayMs: 100, maxRetryAfterMs: 5000 },
    // Records the backoff schedule instead of waiting it out.
    sleep: async (ms) => void sleeps.push(ms),
  });
  return { core, sleeps };
}

async function stub(answer: Parameters<typeof startStubServer>[0]) {
  const server = await startStubServer(answer);
  stubs.push(server);
  return server;
}

/** The broker's own request log: one entry per POST /token it answered. */
const tokenCalls = () =>
  t.broker.logs
    .map((line) => JSON.parse(line) as { msg?: string; route?: string; status?: number; code?: string })
    .filter((entry) => entry.msg === "request" && entry.route === "/token")
    .map((entry) => (entry.code ? `${entry.status} ${entry.code}` : String(entry.status)));

const idTokenRequests = () => t.fx.sim.requests.filter((r) => r.path === "/_actions/idtoken");

describe("main: a token for the job's repository", () => {
  it("masks the token before anything else touches it, then sets the outputs and saves the state", async () => {
    const { core } = await runAction();
    expect(core.failed()).toBeUndefined();
    const outputs = core.outputs();
    expect(Object.keys(outputs)).toEqual(["token", "expires-at", "repository", "repositories", "installation-id", "app-slug", "permissions"]);
    expect(outputs["installation-id"]).toBe(String(t.fx.installationId));
    expect(outputs["app-slug"]).toBe(`tokensmith-test-${t.fx.app.id}`);
    expect(outputs.repository).toBe("octo-org/app");
    expect(outputs.repositories).toBe("octo-org/app");
    expect(outputs["expires-at"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const issued = t.fx.sim.tokens.get(outputs.token!);
    expect(issued?.repositories).toEqual(["app"]);
    expect(issued?.revoked).toBe(false);
    const first = core.events.find((e) => JSON.stringify(e).includes(outputs.token!));
    expect(first).toEqual({ type: "mask", value: outputs.token });
    expect(core.states()).toEqual({ token: outputs.token, "expires-at": outputs["expires-at"] });
    expect(idTokenRequests().map((r) => r.query.audience)).toEqual(["tokensmith"]);
    expect(tokenCalls()).toEqual(["200"]);
  });

  it("sends the job's repository, the OIDC token and ref, runId and sha for the broker's logs", async () => {
    const recorder = await stub(() => ({ status: 404, body: JSON.stringify({ error: "app_not_installed" }) }));
    const { core } = await runAction({ "broker-url": recorder.url });
    expect(recorder.requests).toHaveLength(1);
    const [request] = recorder.requests;
    expect(request!.method).toBe("POST");
    expect(request!.path).toBe("/token");
    expect(request!.headers["content-type"]).toBe("application/json");
    const body = JSON.parse(request!.body) as Record<string, string>;
    expect(body).toEqual({ oidcToken: expect.any(String), owner: "octo-org", repo: "app", ref: "refs/heads/main", runId: "4242", sha: DEFAULT_SHA });
    expect(core.events.filter((e) => e.type === "mask").map((e) => (e as { value: string }).value)).toContain(body.oidcToken);
    expect(core.failed()).toContain("app_not_installed");
  });

  it("uses the oidc-audience input for the OIDC token", async () => {
    t.broker.env.OIDC_AUDIENCE = "tokensmith,release-bot";
    const { core } = await runAction({ "oidc-audience": "release-bot" });
    expect(core.failed()).toBeUndefined();
    expect(idTokenRequests().map((r) => r.query.audience)).toEqual(["release-bot"]);
  });

  it("with skip-token-revoke: true sets the outputs but saves no state for post", async () => {
    const { core } = await runAction({ "skip-token-revoke": "true" });
    expect(core.failed()).toBeUndefined();
    expect(core.outputs().token).toBeTruthy();
    expect(core.states()).toEqual({});
  });
});

describe("main: inputs and the runner", () => {
  it.each([["github-app"], ["PUBLIC-APP"], [""]])("fails with one line naming the supported modes for auth-mode %j", async (mode) => {
    const { core } = await runAction({ "auth-mode": mode });
    expect(core.failed()).toMatch(/^tokensmith: auth-mode .*; supported modes: public-app\.$/);
    expect(core.failed()).not.toContain("\n");
    expect(idTokenRequests()).toHaveLength(0);
    expect(tokenCalls()).toEqual([]);
  });

  it("fails when broker-url is missing or not a URL", async () => {
    expect((await runAction({ "broker-url": "" })).core.failed()).toContain("broker-url is required");
    expect((await runAction({ "broker-url": "tokensmith.example.com" })).core.failed()).toContain("broker-url is not a URL");
    expect(tokenCalls()).toEqual([]);
  });

  it("without id-token: write (no ACTIONS_ID_TOKEN_REQUEST_*) fails with the exact fix", async () => {
    for (const missing of ["ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"]) {
      const { core } = await runAction({}, { [missing]: undefined });
      expect(core.failed()).toContain("add `permissions: id-token: write` to the job");
      expect(core.failed()).not.toContain("\n");
    }
    expect(idTokenRequests()).toHaveLength(0);
    expect(tokenCalls()).toEqual([]);
  });
});

describe("main: the fallback address, only when the primary is unreachable", () => {
  it.each([
    ["refuses connections", async () => closedPortUrl()],
    ["does not resolve", async () => "https://tokensmith-primary.invalid"],
    ["answers a 502 that is not a verdict", async () => (await stub(() => ({ status: 502, contentType: "text/html", body: "<h1>Bad Gateway</h1>" }))).url],
    ["answers a 500 JSON body without a broker code", async () => (await stub(() => ({ status: 500, body: '{"error":"boom"}' }))).url],
  ])("falls back when the primary %s", async (_name, primary) => {
    const { core, sleeps } = await runAction({ "broker-url": await primary(), "broker-fallback-url": t.broker.url });
    expect(core.failed()).toBeUndefined();
    expect(t.fx.sim.tokens.get(core.outputs().token!)).toBeDefined();
    expect(tokenCalls()).toEqual(["200"]);
    expect(idTokenRequests()).toHaveLength(2); // a fresh OIDC token for each address tried
    expect(sleeps).toEqual([]);
    expect(core.messages().some((m) => /attempt 1: .* is unreachable/.test(m))).toBe(true);
  });

  it("falls back when the primary does not answer within the timeout", async () => {
    const hung = await stub(() => "hang");
    const { core } = await runAction({ "broker-url": hung.url, "broker-fallback-url": t.broker.url }, {}, { timeoutMs: 300 });
    expect(core.failed()).toBeUndefined();
    expect(hung.requests).toHaveLength(1);
    expect(tokenCalls()).toEqual(["200"]);
  });

  it("never calls the fallback after a verdict: a 401 fails at once with its code and reason", async () => {
    const fallback = await stub(() => ({ status: 500, body: "{}" }));
    const { core, sleeps } = await runAction({ "oidc-audience": "someone-else", "broker-fallback-url": fallback.url });
    expect(tokenCalls()).toEqual(["401 invalid_oidc_token"]);
    expect(fallback.requests).toHaveLength(0);
    expect(sleeps).toEqual([]);
    expect(core.failed()).toBe(
      `tokensmith: The action's oidc-audience input ("someone-else") and the broker's OIDC_AUDIENCE disagree: set oidc-audience to an audience the broker accepts, or ask its operator to add "someone-else". (error: invalid_oidc_token, reason: audience_mismatch, HTTP 401 from ${t.broker.url})`,
    );
  });

  it("fails without a second try when the primary answers a 4xx that is not a broker's", async () => {
    const proxy = await stub(() => ({ status: 404, contentType: "text/html", body: "Not Found" }));
    const fallback = await stub(() => ({ status: 500, body: "{}" }));
    const { core, sleeps } = await runAction({ "broker-url": proxy.url, "broker-fallback-url": fallback.url });
    expect(core.failed()).toBe(`tokensmith: ${proxy.url} answered HTTP 404 that is not a broker answer: check that broker-url is the tokensmith broker's origin.`);
    expect(proxy.requests).toHaveLength(1);
    expect(fallback.requests).toHaveLength(0);
    expect(sleeps).toEqual([]);
  });

  it.each([["empty", () => ""], ["the primary again (trailing slash)", (primary: string) => `${primary}/`]])(
    "makes no second try per attempt when the fallback is %s",
    async (_name, fallbackFor) => {
      const down = await stub(() => ({ status: 503, contentType: "text/plain", body: "upstream connect error" }));
      const { core, sleeps } = await runAction({ "broker-url": down.url, "broker-fallback-url": fallbackFor(down.url) });
      expect(down.requests).toHaveLength(3); // one per attempt
      expect(sleeps).toEqual([100, 200]);
      expect(core.failed()).toBe(
        `tokensmith: could not reach the broker at ${down.url} (HTTP 503 that is not a broker answer) after 3 attempts: check broker-url, or retry later.`,
      );
    },
  );

  it("names both addresses when neither can be reached", async () => {
    const primary = await closedPortUrl();
    const { core, sleeps } = await runAction({ "broker-url": primary, "broker-fallback-url": "https://tokensmith-fallback.invalid" });
    expect(sleeps).toEqual([100, 200]);
    expect(core.failed()).toMatch(/^tokensmith: could not reach the broker at http:\/\/127\.0\.0\.1:\d+ \(.*ECONNREFUSED.*\), nor https:\/\/tokensmith-fallback\.invalid \(.*\) after 3 attempts: check broker-url and broker-fallback-url, or retry later\.$/);
  });
});

describe("main: 503 oidc_key_fetch_failed is retried with backoff", () => {
  it("retries with a fresh OIDC token and succeeds once the broker reaches the issuer's keys", async () => {
    t.fx.sim.faults.add({ method: "GET", path: "/oidc/.well-known/openid-configuration", times: 1, respond: { status: 500, body: { message: "down" } } });
    const { core, sleeps } = await runAction();
    expect(core.failed()).toBeUndefined();
    expect(tokenCalls()).toEqual(["503 oidc_key_fetch_failed", "200"]);
    expect(sleeps).toEqual([1000]); // the broker's Retry-After (at least 1 s) outlasts the 100 ms backoff
    const jwts = core.events.flatMap((e) => (e.type === "mask" && e.value.startsWith("eyJ") ? [e.value] : []));
    expect(new Set(jwts).size).toBe(2);
    expect(core.messages()).toContain(`tokensmith: attempt 1: ${t.broker.url} answered 503 oidc_key_fetch_failed (jwks_unavailable)`);
  });

  it("fails with the code and reason when the keys stay out of reach", async () => {
    t.fx.sim.oidc.keyEndpoint = "fail";
    const fallback = await stub(() => ({ status: 500, body: "{}" }));
    const { core, sleeps } = await runAction({ "broker-fallback-url": fallback.url });
    expect(tokenCalls()).toEqual(["503 oidc_key_fetch_failed", "503 oidc_key_fetch_failed", "503 oidc_key_fetch_failed"]);
    expect(fallback.requests).toHaveLength(0);
    expect(sleeps).toEqual([1000, 1000]); // Retry-After: 1 each time, longer than the backoff
    expect(core.failed()).toBe(
      `tokensmith: ${WORKFLOW_HINTS.oidc_key_fetch_failed} (error: oidc_key_fetch_failed, reason: jwks_unavailable, HTTP 503 from ${t.broker.url}) after 3 attempts`,
    );
  });
});

describe("main: Retry-After decides which 5xx verdicts are retried, and how long to wait", () => {
  const mintFailed = JSON.stringify({ error: "installation_token_failed" });

  it.each([
    ["3600 (capped at maxRetryAfterMs, 5000 here)", "3600", [5000, 5000]],
    ["0 (the backoff is longer)", "0", [100, 200]],
    ["2 (longer than the first backoff, not the second)", "2", [2000, 2000]],
  ])("Retry-After: %s", async (_name, header, expected) => {
    const broker = await stub(() => ({ status: 502, headers: { "retry-after": header }, body: mintFailed }));
    const { core, sleeps } = await runAction({ "broker-url": broker.url });
    expect(broker.requests).toHaveLength(3);
    expect(sleeps).toEqual(expected);
    expect(core.failed()).toBe(`tokensmith: ${WORKFLOW_HINTS.installation_token_failed} (error: installation_token_failed, HTTP 502 from ${broker.url}) after 3 attempts`);
  });

  it("an HTTP-date Retry-After counts too", async () => {
    const broker = await stub(() => ({ status: 503, headers: { "retry-after": new Date(Date.now() + 60_000).toUTCString() }, body: JSON.stringify({ error: "oidc_key_fetch_failed" }) }));
    const { sleeps } = await runAction({ "broker-url": broker.url });
    expect(sleeps).toEqual([5000, 5000]);
  });

  it.each([["absent", undefined], ["not a number or a date", "soon"]])("a 502 whose Retry-After is %s fails at once", async (_name, header) => {
    const broker = await stub(() => ({ status: 502, ...(header ? { headers: { "retry-after": header } } : {}), body: mintFailed }));
    const { core, sleeps } = await runAction({ "broker-url": broker.url });
    expect(broker.requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
    expect(core.failed()).toBe(`tokensmith: ${WORKFLOW_HINTS.installation_token_failed} (error: installation_token_failed, HTTP 502 from ${broker.url})`);
  });
});

describe("main: the runner's ID-token endpoint", () => {
  it("a 503 then a token: retried with the backoff, one OIDC token masked", async () => {
    t.fx.sim.faults.add({ method: "GET", path: "/_actions/idtoken", times: 1, respond: { status: 503, body: { message: "Service Unavailable" } } });
    const { core, sleeps } = await runAction();
    expect(core.failed()).toBeUndefined();
    expect(idTokenRequests()).toHaveLength(2);
    expect(sleeps).toEqual([100]);
    expect(core.messages()).toContain("tokensmith: the runner's OIDC token service failed (HTTP 503); retrying in 100 ms (attempt 2 of 3)");
  });

  it("a hung endpoint: each try ends at the timeout, three tries, one line", async () => {
    t.fx.sim.faults.add({ method: "GET", path: "/_actions/idtoken", respond: "hang" });
    const { core, sleeps } = await runAction({}, {}, { timeoutMs: 300 });
    expect(idTokenRequests()).toHaveLength(3);
    expect(sleeps).toEqual([100, 200]);
    expect(core.failed()).toBe(
      `tokensmith: the runner's OIDC token service at ${t.fx.sim.url} is unreachable or failing (ETIMEDOUT: no answer within 300 ms) after 3 attempts: re-run the job later; on a self-hosted runner, check its network and proxy settings.`,
    );
    expect(tokenCalls()).toEqual([]);
  });

  it("a 403 fails at once with the id-token: write hint", async () => {
    t.fx.sim.faults.add({ method: "GET", path: "/_actions/idtoken", respond: { status: 403, body: { message: "Forbidden" } } });
    const { core, sleeps } = await runAction();
    expect(idTokenRequests()).toHaveLength(1);
    expect(sleeps).toEqual([]);
    expect(core.failed()).toContain("the job lacks `permissions: id-token: write`, or its request token is stale");
  });

  it("a 200 without a token fails at once: not the runner's token service", async () => {
    t.fx.sim.faults.add({ method: "GET", path: "/_actions/idtoken", respond: { status: 200, body: { count: 1 } } });
    const { core } = await runAction();
    expect(idTokenRequests()).toHaveLength(1);
    expect(core.failed()).toBe(`tokensmith: the runner's OIDC token service at ${t.fx.sim.url} answered HTTP 200 without a token in the body: re-run the job; if it persists, the runner is misconfigured.`);
  });
});

describe("main: a verdict becomes one line with the fix", () => {
  it("repo_not_allowed: the broker's operator must add the repository", async () => {
    t.broker.env.ALLOWED_REPOSITORIES = "octo-org/other";
    const { core } = await runAction();
    expect(core.failed()).toBe(
      `tokensmith: octo-org/app is not in the broker's ALLOWED_REPOSITORIES: the broker's operator must add it. (error: repo_not_allowed, HTTP 403 from ${t.broker.url})`,
    );
  });

  it("app_not_installed: install the App on owner/repo", async () => {
    t.fx.sim.actions.claims = { repository: "octo-org/elsewhere", repository_owner: "octo-org" };
    const { core } = await runAction({}, { GITHUB_REPOSITORY: "octo-org/elsewhere" });
    expect(tokenCalls()).toEqual(["404 app_not_installed"]);
    expect(core.failed()).toBe(
      `tokensmith: The broker's GitHub App is not installed on octo-org/elsewhere: install it on octo-org/elsewhere (organisation or repository settings → GitHub Apps). (error: app_not_installed, HTTP 404 from ${t.broker.url})`,
    );
  });

  it("app_unconfigured: a 503 that retrying cannot change fails at once", async () => {
    t.broker.env.HOST_APP_ID = undefined;
    const { core, sleeps } = await runAction();
    expect(tokenCalls()).toEqual(["503 app_unconfigured"]);
    expect(sleeps).toEqual([]);
    expect(core.failed()).toBe(`tokensmith: ${WORKFLOW_HINTS.app_unconfigured} (error: app_unconfigured, HTTP 503 from ${t.broker.url})`);
  });
});

describe("post: revoking the token", () => {
  async function mainThenPost(inputs: Record<string, string> = {}, env: Env = {}, now = Date.now) {
    const main = await runAction(inputs);
    const token = main.core.outputs().token!;
    const core = recordingToolkit({ inputs: { "skip-token-revoke": inputs["skip-token-revoke"] ?? "false" }, state: main.core.states() });
    toolkits.push(core);
    t.fx.sim.clearRequests();
    await post({ core, env: { ...jobEnv(), ...env }, http: createHttp({ timeoutMs: 2000 }), now });
    const deletes = t.fx.sim.requests.filter((r) => r.method === "DELETE" && r.path === "/installation/token");
    return { core, token, deletes };
  }

  it("revokes the token at the platform: the DELETE is seen and the token is dead", async () => {
    const { core, token, deletes } = await mainThenPost();
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.auth).toEqual({ kind: "installation", token });
    expect(t.fx.sim.tokens.get(token)!.revoked).toBe(true);
    expect(core.messages()).toEqual(["tokensmith: token revoked"]);
  });

  it("skip-token-revoke: true leaves the token alive", async () => {
    const { core, token, deletes } = await mainThenPost({ "skip-token-revoke": "true" });
    expect(deletes).toHaveLength(0);
    expect(t.fx.sim.tokens.get(token)!.revoked).toBe(false);
    expect(core.messages()).toEqual(["tokensmith: token revocation skipped (skip-token-revoke: true)"]);
  });

  it("does not call the platform for a token that has already expired", async () => {
    const { core, deletes } = await mainThenPost({}, {}, () => Date.now() + 2 * 60 * 60 * 1000);
    expect(deletes).toHaveLength(0);
    expect(core.messages()).toEqual(["tokensmith: the token has already expired; nothing to revoke"]);
  });

  it("does nothing when main saved no token", async () => {
    const core = recordingToolkit({ inputs: { "skip-token-revoke": "false" } });
    await post({ core, env: jobEnv(), http: createHttp({ timeoutMs: 2000 }), now: Date.now });
    expect(t.fx.sim.requests).toHaveLength(0);
    expect(core.messages()).toEqual(["tokensmith: no token to revoke"]);
  });

  it("warns with the platform's status and message when the revocation fails, and never fails the job", async () => {
    const main = await runAction();
    const token = main.core.outputs().token!;
    t.fx.sim.tokens.get(token)!.revoked = true; // already dead: the platform answers 401
    const core = recordingToolkit({ inputs: { "skip-token-revoke": "false" }, state: main.core.states() });
    toolkits.push(core);
    await post({ core, env: jobEnv(), http: createHttp({ timeoutMs: 2000 }), now: Date.now });
    expect(core.warnings()).toEqual(["tokensmith: token revocation failed: HTTP 401 Bad credentials"]);
    expect(core.failed()).toBeUndefined();
  });

  it("warns, without calling the platform, when skip-token-revoke is not a boolean", async () => {
    const main = await runAction();
    const core = recordingToolkit({ inputs: { "skip-token-revoke": "yes" }, state: main.core.states() });
    toolkits.push(core);
    t.fx.sim.clearRequests();
    await post({ core, env: jobEnv(), http: createHttp({ timeoutMs: 2000 }), now: Date.now });
    expect(t.fx.sim.requests).toHaveLength(0);
    expect(core.warnings()).toEqual(['tokensmith: skip-token-revoke must be true or false, not "yes".']);
    expect(core.failed()).toBeUndefined();
  });

  it("warns when the platform cannot be reached", async () => {
    const { core, deletes } = await mainThenPost({}, { GITHUB_API_URL: await closedPortUrl() });
    expect(deletes).toHaveLength(0);
    expect(core.warnings()).toHaveLength(1);
    expect(core.warnings()[0]).toMatch(/^tokensmith: token revocation failed: .*ECONNREFUSED/);
    expect(core.failed()).toBeUndefined();
  });
});
