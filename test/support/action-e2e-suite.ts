// The bundled action end to end, as the runner runs it: the bundled dist/main and dist/post in child
// processes, with INPUT_* variables, GITHUB_OUTPUT / GITHUB_STATE files and STATE_* variables
// (action-runner.ts), the simulator's ID-token endpoint, and the real broker in-process. One suite
// per runtime, each in a file of its own (test/action-e2e.test.ts, test/action-e2e-node24.test.ts),
// so the two run in parallel.
import { afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { expectNoSecrets } from "./fixtures.js";
import { brokerPerTest } from "./broker-per-test.js";
import { runnerJobEnv } from "./runner-env.js";
import type { FaultResponse } from "../../simulator/types.js";
import { runStep, type StepOptions, type StepResult } from "./action-runner.js";
import { RUNTIMES } from "./action-node24.js";
import { closedPortUrl, startConnectProxy, startSilentServer, startStubServer, startTlsFront, type StubServer } from "./action-stub-server.js";
import { selfSignedCertificate } from "./test-certificate.js";

/** Registers the suite's hooks and tests for these runtimes; call it at a test file's top level. */
export function actionE2eSuite(runtimes: typeof RUNTIMES): void {
  let stubs: Pick<StubServer, "close">[] = [];

  const t = brokerPerTest();
  afterEach(async () => {
    await Promise.all(stubs.map((stub) => stub.close()));
    stubs = [];
  });

  const jobEnv = () => ({
    ...runnerJobEnv(t.fx.sim),
    // Operator/test tuning of the backoff base (see action/main-step.ts): keeps the retry test quick.
    TOKENSMITH_RETRY_BASE_MS: "10",
  });

  // The node binary the steps run under: each runtime's block below sets it before its tests.
  let node = process.execPath;
  const step = (name: "main" | "post", options: StepOptions) => runStep(name, { node, ...options });

  const runMain = (inputs: Record<string, string> = {}, env: Record<string, string | undefined> = {}) =>
    step("main", { inputs: { "auth-mode": "public-app", "broker-url": t.broker.url, ...inputs }, env: { ...jobEnv(), ...env } });

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

  describe.each(runtimes)("on $label", (runtime) => {
    beforeAll(() => {
      node = runtime.node();
    }, 360_000);

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

        const post = await step("post", { env: jobEnv(), state: main.state });
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
        const post = await step("post", { inputs: { "skip-token-revoke": "true" }, env: jobEnv(), state: main.state });
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

      it("goes through https_proxy for a broker whose name only the proxy can reach (the README's promise)", async () => {
        const proxy = await startConnectProxy();
        stubs.push(proxy);
        // https end to end (plain http is refused off loopback): TLS for the broker's name in front of it, trusted by the step.
        const certificate = selfSignedCertificate("tokensmith-broker.invalid");
        const front = await startTlsFront(Number(new URL(t.broker.url).port), certificate);
        stubs.push(front);
        // .invalid never resolves (RFC 6761): the broker is reachable through the proxy or not at all.
        const main = await runMain({ "broker-url": `https://tokensmith-broker.invalid:${front.port}` }, { https_proxy: proxy.url, NODE_EXTRA_CA_CERTS: certificate.certFile });
        expect(main.exitCode).toBe(0);
        expect(proxy.connects).toEqual([`tokensmith-broker.invalid:${front.port}`]);
        expect(tokenCalls()).toEqual(["200"]);
        expect(t.fx.sim.tokens.has(main.outputs.token!)).toBe(true);
      });

      it("repositories: one token for the job's repository and another that consents in its own policy; the repositories output lists both; a target that does not consent fails the step naming it", async () => {
        t.broker.env.TOKEN_POLICY = "optional";
        t.fx.sim.git.setFile("octo-org/other", ".github/tokensmith.yml", "rules:\n  - name: from-app\n    if: {repository: octo-org/app, event: push}\n    permissions: {contents: read}\n");
        try {
          const main = await runMain({ repositories: "octo-org/other,\n app" });
          expect(main.exitCode).toBe(0);
          const token = main.outputs.token!;
          expect([...(t.fx.sim.tokens.get(token)!.repositories as string[])].sort()).toEqual(["app", "other"]);
          expect(t.fx.sim.tokens.get(token)!.permissions).toEqual({ contents: "read" });
          expect(main.outputs.repository).toBe("octo-org/app");
          expect(main.outputs.repositories).toBe("octo-org/app,octo-org/other");
          expect(main.lines).toContain(`tokensmith: got a token for octo-org/app, octo-org/other, expires at ${main.outputs["expires-at"]}`);

          const denied = await runMain({ repositories: "no-such-repo" });
          expect(denied.exitCode).toBe(1);
          expect(denied.outputs).toEqual({});
          expect(errorLine(denied)).toContain("repository octo-org/no-such-repo does not consent to a token for octo-org/app from this job");
          expect(errorLine(denied)).toContain("(error: policy_denied, HTTP 403");
          // Checked by the action before any request: another owner's repository.
          const foreign = await runMain({ repositories: "other-org/site" });
          expect(errorLine(foreign)).toBe('::error::tokensmith: repositories: repository "other-org/site" is not of the owner octo-org (a token covers repositories of one owner).');
          expect(tokenCalls()).toEqual(["200", "403 policy_denied"]);
        } finally {
          t.fx.sim.git.setFile("octo-org/other", ".github/tokensmith.yml", null);
        }
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
        expect(main.lines).toContain("tokensmith: retrying in 1000 ms (attempt 2 of 4)"); // the broker's Retry-After, not the 10 ms backoff
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

    // Issue 11 item 3: every attempt ends within its timeout and the process exits when the step is
    // done. TOKENSMITH_ATTEMPT_TIMEOUT_MS (action/main-step.ts) makes the per-attempt timeout seconds, not
    // 30 s; the bound on the child is the runner's view: a step that has not exited is killed.
    describe("the bundled main step always ends", () => {
      const ATTEMPT_MS = 500;
      const BOUND_MS = 25_000; // 4 attempts of 0.5 s plus backoff, with a wide margin for a loaded machine
      const bounded = { TOKENSMITH_ATTEMPT_TIMEOUT_MS: String(ATTEMPT_MS) };

      it("a broker that accepts the connection and never answers: four timed-out attempts, then the process exits with the failure", async () => {
        const silent = await startSilentServer();
        stubs.push(silent);
        const main = await step("main", { inputs: { "auth-mode": "public-app", "broker-url": silent.url }, env: { ...jobEnv(), ...bounded }, killAfterMs: BOUND_MS });
        expect(main.killed).toBe(false);
        expect(main.exitCode).toBe(1);
        expect(silent.connections()).toBe(4);
        expect(errorLine(main)).toBe(`::error::tokensmith: could not reach the broker at ${silent.url} (ETIMEDOUT: no answer within ${ATTEMPT_MS} ms) after 4 attempts: check broker-url, or retry later.`);
      }, 40_000);

      it("the same with a fallback that answers: the outputs are written and the process exits", async () => {
        const silent = await startSilentServer();
        stubs.push(silent);
        // The fallback answers within the 0.5 s attempt only once warm (its key set, the
        // installation): a cold broker on a loaded machine took longer, and the action rightly went
        // back to the primary for its next attempt.
        const warm = await fetch(`${t.broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken: await t.fx.sim.oidc.sign(), owner: "octo-org", repo: "app" }) });
        expect(warm.status).toBe(200);
        const main = await step("main", {
          inputs: { "auth-mode": "public-app", "broker-url": silent.url, "broker-fallback-url": t.broker.url },
          env: { ...jobEnv(), ...bounded },
          killAfterMs: BOUND_MS,
        });
        expect(main.killed).toBe(false);
        expect(main.exitCode).toBe(0);
        expect(silent.connections()).toBe(1);
        expect(t.fx.sim.tokens.has(main.outputs.token!)).toBe(true);
        expect(main.lines).toContain(`tokensmith: attempt 1: ${silent.url} is unreachable (ETIMEDOUT: no answer within ${ATTEMPT_MS} ms)`);
      }, 40_000);

      it("post exits when the platform accepts the connection and never answers, with a warning", async () => {
        const silent = await startSilentServer();
        stubs.push(silent);
        const post = await step("post", {
          env: { ...jobEnv(), ...bounded, GITHUB_API_URL: silent.url },
          state: { token: "ghs_never_sent_anywhere_real_000000000001", "expires-at": new Date(Date.now() + 3_600_000).toISOString() },
          killAfterMs: BOUND_MS,
        });
        expect(post.killed).toBe(false);
        expect(post.exitCode).toBe(0);
        expect(post.lines).toEqual([`::warning::tokensmith: token revocation failed: ETIMEDOUT: no answer within ${ATTEMPT_MS} ms`]);
      }, 40_000);
    });

    // Issue 11 item 5, the action's side: a 5xx verdict is retried only when the broker marks it with
    // Retry-After (oidc_key_fetch_failed always); the wait is the larger of the backoff and the
    // header, capped at 30 s. The broker here is the action's own stub, so this does not depend on
    // the broker's version.
    describe("the bundled main step retries only what the broker marks as worth retrying", () => {
      // An hour ahead: the action refuses an expires_at more than a day away (issue 25).
      const tokenBody = JSON.stringify({ token: "ghs_stubbed_installation_token_00000000001", expires_at: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, "Z"), repository: "octo-org/app" });
      const stub = async (answer: Parameters<typeof startStubServer>[0]) => {
        const server = await startStubServer(answer);
        stubs.push(server);
        return server;
      };

      it("502 installation_token_failed with Retry-After: 1 is retried after a second, and succeeds", async () => {
        let calls = 0;
        const broker = await stub(() =>
          ++calls === 1 ? { status: 502, headers: { "retry-after": "1" }, body: JSON.stringify({ error: "installation_token_failed" }) } : { status: 200, body: tokenBody },
        );
        const main = await runMain({ "broker-url": broker.url });
        expect(main.exitCode).toBe(0);
        expect(broker.requests).toHaveLength(2);
        expect(main.lines).toContain("tokensmith: retrying in 1000 ms (attempt 2 of 4)");
        expect(main.outputs.token).toBe("ghs_stubbed_installation_token_00000000001");
      });

      it.each([
        ["502 installation_token_failed without Retry-After (a permanent mint refusal)", 502, "installation_token_failed", {}],
        ["500 github_installation_lookup_failed without Retry-After", 500, "github_installation_lookup_failed", {}],
        ["403 repo_not_allowed, even with a Retry-After", 403, "repo_not_allowed", { "retry-after": "1" }],
      ])("%s fails at once: one request", async (_name, status, error, headers) => {
        const broker = await stub(() => ({ status, headers, body: JSON.stringify({ error }) }));
        const main = await runMain({ "broker-url": broker.url });
        expect(main.exitCode).toBe(1);
        expect(broker.requests).toHaveLength(1);
        expect(errorLine(main)).toContain(`(error: ${error}, HTTP ${status} from ${broker.url})`);
        expect(main.lines.some((line) => line.startsWith("tokensmith: retrying"))).toBe(false);
      });

      it("503 oidc_key_fetch_failed from a broker that sends no Retry-After is still retried", async () => {
        const broker = await stub(() => ({ status: 503, body: JSON.stringify({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" }) }));
        const main = await runMain({ "broker-url": broker.url });
        expect(main.exitCode).toBe(1);
        expect(broker.requests).toHaveLength(4);
        expect(errorLine(main)).toContain(`(error: oidc_key_fetch_failed, reason: jwks_unavailable, HTTP 503 from ${broker.url}) after 4 attempts`);
      });
    });

    // The runner's ID-token endpoint failing: transient failures are retried, each failure class is
    // one line with its fix, never the toolkit's multi-line text.
    describe("the bundled main step and the runner's ID-token endpoint", () => {
      const idTokenCalls = () => t.fx.sim.requests.filter((r) => r.path === "/_actions/idtoken");
      const errorLines = (step: StepResult) => step.lines.filter((line) => line.startsWith("::error::"));

      it("a 401 (stale request token) fails at once with the id-token: write hint, in one line", async () => {
        const main = await runMain({}, { ACTIONS_ID_TOKEN_REQUEST_TOKEN: "stale-request-token" });
        expect(main.exitCode).toBe(1);
        expect(idTokenCalls()).toHaveLength(1);
        expect(errorLines(main)).toEqual([
          `::error::tokensmith: the runner refused to issue an OIDC token (HTTP 401 from ${t.fx.sim.url}): the job lacks \`permissions: id-token: write\`, or its request token is stale (re-run the job).`,
        ]);
        expect(tokenCalls()).toEqual([]);
      });

      it.each<[string, FaultResponse]>([
        ["a 500", { status: 500, body: { message: "Internal Server Error" } }],
        ["a reset connection", "reset"],
        ["a 429 with Retry-After: 0", { status: 429, headers: { "retry-after": "0" }, body: { message: "Too Many Requests" } }],
      ])("%s once is retried, and the step succeeds", async (_name, respond) => {
        t.fx.sim.faults.add({ method: "GET", path: "/_actions/idtoken", times: 1, respond });
        const main = await runMain();
        expect(main.exitCode).toBe(0);
        expect(idTokenCalls()).toHaveLength(2);
        expect(tokenCalls()).toEqual(["200"]);
        expect(main.lines.some((line) => /^tokensmith: the runner's OIDC token service failed \(.+\); retrying in 10 ms \(attempt 2 of 4\)$/.test(line))).toBe(true);
      });

      it("an unreachable token service fails after four attempts with one line that says so", async () => {
        const closed = await closedPortUrl();
        const main = await runMain({}, { ACTIONS_ID_TOKEN_REQUEST_URL: `${closed}/_actions/idtoken?api-version=2.0` });
        expect(main.exitCode).toBe(1);
        expect(errorLines(main)).toHaveLength(1);
        expect(errorLines(main)[0]).toMatch(
          new RegExp(`^::error::tokensmith: the runner's OIDC token service at ${closed.replace(/\./g, "\\.")} is unreachable or failing \\(.*ECONNREFUSED.*\\) after 4 attempts: re-run the job later; on a self-hosted runner, check its network and proxy settings\\.$`),
        );
        expect(tokenCalls()).toEqual([]);
      });
    });
  });
}
