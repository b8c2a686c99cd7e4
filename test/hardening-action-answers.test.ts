// Issue 25: the bundled action (dist/main, dist/post) treats whatever answers at broker-url as
// untrusted. Each test runs dist/ in a child process on Node 24 (the runner's runtime) the way the
// runner does (INPUT_*, GITHUB_OUTPUT / GITHUB_STATE files) against a canned broker that gives one
// hostile answer, and asserts on the runner's view: stdout's workflow commands, the outputs, the
// exit code, and how many POST /token the brokers received. In a group of cases that differ only in
// what a pure check decides (a field of the answer, an input's value), the first runs dist/ that
// way and the others run the same main step in this process, with the real @actions/core and read
// the same way (support/action-runner.ts, runMainInProcess).
import { afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { MISMATCH, WORKFLOW_HINTS } from "../action/hints.js";
import { runMainInProcess, runStep, type StepResult } from "./support/action-runner.js";
import { node24 } from "./support/action-node24.js";
import { startSilentServer } from "./support/action-stub-server.js";
import { CANNED_JWT, goodAnswer, runnerData, startCannedBroker, type CannedBroker, type TokenHandler } from "./support/canned-broker.js";
import { expectNoSecrets } from "./support/fixtures.js";

let node = "";
beforeAll(() => {
  node = node24();
}, 360_000);

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function canned(onToken: TokenHandler): Promise<CannedBroker> {
  const broker = await startCannedBroker(onToken);
  closers.push(() => broker.close());
  return broker;
}

/** The bundled main step in a child process; with `inProcess`, the same step in this process. */
async function main(broker: CannedBroker, inputs: Record<string, string> = {}, env: Record<string, string> = {}, { inProcess = false } = {}): Promise<StepResult> {
  const step = { inputs: { "auth-mode": "public-app", "broker-url": broker.url, ...inputs }, env: { ...broker.jobEnv(), ...env } };
  return inProcess ? runMainInProcess(step) : runStep("main", { node, ...step, killAfterMs: 60_000 });
}

/** A group's cases, each with whether it runs in this process: every one but the first, which runs dist/ in a child process. */
const firstInChild = <T extends unknown[]>(cases: T[]): [...T, boolean][] => cases.map((each, index) => [...each, index > 0]);

/** The workflow commands the runner reads from the step's output: every line that starts with `::`. */
const commands = (step: StepResult) => step.lines.filter((line) => line.startsWith("::")).map((line) => /^::([^:\s]*)/.exec(line)![1]);
const errorLines = (step: StepResult) => step.lines.filter((line) => line.startsWith("::error::"));

/** The step failed with one ::error:: whose data (as the runner decodes it) is one line; nothing else became a command. */
function expectOneSafeError(step: StepResult): string {
  expect(step.killed).toBe(false);
  expect(step.exitCode).toBe(1);
  expect(commands(step).filter((name) => name !== "add-mask")).toEqual(["error"]);
  const data = runnerData(errorLines(step)[0]!);
  expect(data).not.toMatch(/[\r\n]/);
  expect(data.startsWith("tokensmith: ")).toBe(true);
  return data;
}

/** `::add-mask::X` comes before any other line that contains X, and X shows nowhere else. */
function expectMaskedFirst(step: StepResult, secret: string): void {
  const mask = step.lines.indexOf(`::add-mask::${secret}`);
  expect(mask).toBeGreaterThanOrEqual(0);
  expect(step.lines.findIndex((line) => line.includes(secret))).toBe(mask);
  expectNoSecrets(step.lines.filter((line) => !line.startsWith("::add-mask::")), [secret, CANNED_JWT]);
}

const FORGED = "\n::error::forged by the broker\n::warning::forged\n::stop-commands::tokensmith-forged\n::add-mask::x";

describe("item 1: nothing the broker sends becomes a workflow command", () => {
  it.each(
    firstInChild<[string, Record<string, unknown>]>([
      ["repository", { repository: `octo-org/app${FORGED}` }],
      ["expires_at", { expires_at: `2099-01-01T00:00:00Z${FORGED}` }],
      ["app_slug", { app_slug: `release${FORGED}` }],
      ["installation_id", { installation_id: `1${FORGED}` }],
    ]),
  )("a 200 whose %s carries line breaks and commands: refused, escaped, the token revoked", async (_field, overrides, inProcess) => {
    const answer = goodAnswer(overrides);
    const broker = await canned(() => ({ status: 200, body: answer }));
    const step = await main(broker, {}, {}, { inProcess });
    const data = expectOneSafeError(step);
    expect(data).toContain("tokensmith: refused the answer from");
    expect(data).toContain("\\u000a::error::forged by the broker");
    expect(step.lines.some((line) => /^(::)?(warning|stop-commands|error)::forged/.test(line) || line.startsWith("::stop-commands::"))).toBe(false);
    expectMaskedFirst(step, answer.token as string);
    expect(step.outputs).toEqual({});
    expect(step.state).toEqual({});
    expect(broker.revocations().map((r) => r.authorization)).toEqual([`Bearer ${answer.token as string}`]);
    expect(broker.tokenPosts()).toBe(1);
  });

  it("a verdict whose reason carries line breaks, commands and %0A escapes: one ::error:: line, the reason escaped", async () => {
    const broker = await canned(() => ({ status: 401, body: { error: "invalid_oidc_token", reason: `bad%0A::warning::percent${FORGED}\u2028\u202e` } }));
    const step = await main(broker);
    const data = expectOneSafeError(step);
    expect(data).toContain('reason: "bad%0A::warning::percent\\u000a::error::forged');
    expect(data).toContain("a word this version of the action does not know");
    expect(broker.tokenPosts()).toBe(1);
  });

  it("an error body whose `error` is no broker code, with commands in it: only the status is shown", async () => {
    const broker = await canned(() => ({ status: 403, body: { error: `nope${FORGED}`, reason: FORGED } }));
    const step = await main(broker);
    expect(expectOneSafeError(step)).toBe(`tokensmith: ${broker.url} answered HTTP 403 that is not a broker answer: check that broker-url is the tokensmith broker's origin.`);
    expect(broker.tokenPosts()).toBe(1);
  });

  it("a 200 with a token and a hostile key, nothing else: refused, the key never echoed", async () => {
    const broker = await canned(() => ({ status: 200, body: { token: "ghs_onlyTheToken000000000000000000000001", [`x${FORGED}`]: 1 } }));
    const step = await main(broker);
    const data = expectOneSafeError(step);
    expect(data).toContain("the answer names no repository. The token it carried has been revoked.");
    expect(data).not.toContain("forged");
    expect(broker.revocations()).toHaveLength(1);
  });
});

describe("item 2: a token for another repository", () => {
  it("is refused (exit 1, no outputs), masked first and revoked at once", async () => {
    const answer = goodAnswer({ repository: "evil-org/other" });
    const broker = await canned(() => ({ status: 200, body: answer }));
    const step = await main(broker, { "broker-fallback-url": broker.url.replace("127.0.0.1", "localhost") });
    const data = expectOneSafeError(step);
    expect(data).toBe(
      `tokensmith: refused the answer from ${broker.url}: the token is for repository "evil-org/other", not "octo-org/app". The token it carried has been revoked. Check broker-url: a tokensmith broker never answers this.`,
    );
    expectMaskedFirst(step, answer.token as string);
    expect(step.outputs).toEqual({});
    expect(broker.revocations()).toHaveLength(1);
    expect(broker.tokenPosts()).toBe(1); // the fallback (same server, other name) was not asked
  });
});

describe("item 3: a token that is not one printable token", () => {
  it.each(
    firstInChild<[string, string]>([
      ["a line break", "ghs_firstLine\nsecondLine"],
      ["a space", "ghs_first second"],
      ["a tab", "ghs_first\tsecond"],
      ["a NUL", "ghs_first\u0000second"],
      ["non-ASCII", "ghs_fïrst"],
      ["2000 characters", `ghs_${"a".repeat(1996)}`],
      ["nothing", ""],
    ]),
  )("with %s: refused, never printed, nothing to revoke", async (_name, token, inProcess) => {
    const broker = await canned(() => ({ status: 200, body: goodAnswer({ token }) }));
    const step = await main(broker, {}, {}, { inProcess });
    const data = expectOneSafeError(step);
    expect(data).toMatch(/the answer carries (no token|a token that is not an installation token \(.*\); it was neither masked nor used|a token longer than 1024 characters)\./);
    expect(step.lines.filter((line) => line.startsWith("::add-mask::") && !line.includes(CANNED_JWT))).toEqual([]);
    for (const piece of token.split(/[\s\u0000]+/).filter((p) => p.length > 3)) expect(step.lines.some((line) => line.includes(piece))).toBe(false);
    expect(step.outputs).toEqual({});
    expect(broker.revocations()).toHaveLength(0);
    expect(broker.tokenPosts()).toBe(1);
  });
});

describe("item 4: a 200 is never followed by another POST, to either broker", () => {
  const bigBody = JSON.stringify({ ...goodAnswer(), padding: "x".repeat(200 * 1024) });
  const shapes: Array<[string, TokenHandler, Record<string, string>]> = [
    ["oversized (200 KiB)", () => ({ status: 200, body: bigBody }), {}],
    [
      "cut off mid-body",
      (_call, res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": "400" });
        res.write('{"token":"ghs_cutOff000000000000000000000000000001","expires_at":"20');
        setTimeout(() => res.destroy(), 50);
        return "raw";
      },
      {},
    ],
    [
      "headers sent, body never finished",
      (_call, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.write('{"token":');
        return "raw";
      },
      { TOKENSMITH_ATTEMPT_TIMEOUT_MS: "1000" },
    ],
    ["not JSON", () => ({ status: 200, body: "<html>OK</html>" }), {}],
    ["JSON null", () => ({ status: 200, body: "null" }), {}],
  ];

  it.each(shapes)("a 200 %s: fails after one POST, the fallback never asked", async (_name, handler, env) => {
    const primary = await canned(handler);
    const fallback = await canned(() => ({ status: 200, body: goodAnswer() }));
    const step = await main(primary, { "broker-fallback-url": fallback.url }, env);
    const data = expectOneSafeError(step);
    expect(data).toMatch(/began a 200 answer that never arrived whole|refused the answer from .*: the answer (is not a JSON object|carries no token)/);
    expect(primary.tokenPosts()).toBe(1);
    expect(fallback.tokenPosts()).toBe(0);
    expect(step.outputs).toEqual({});
  });
});

describe("item 5: expires_at must be an ISO 8601 UTC time, in the future, at most a day ahead", () => {
  const iso = (ms: number) => new Date(Date.now() + ms).toISOString().replace(/\.\d{3}Z$/, "Z");
  it.each(
    firstInChild<[string, string | number, string]>([
      ["in the past", iso(-60_000), "is in the past"],
      ["two days ahead", iso(2 * 86_400_000), "is more than a day ahead"],
      ["not UTC (+02:00)", iso(3_600_000).replace("Z", "+02:00"), "is not a real time written as the platform writes it"],
      ["not a time", "tomorrow", "is not a real time written as the platform writes it"],
      ["a number", 1893456000, "is not a real time written as the platform writes it"],
    ]),
  )("%s: refused and the token revoked at once (post would never see it)", async (_name, expiresAt, problem, inProcess) => {
    const answer = goodAnswer({ expires_at: expiresAt });
    const broker = await canned(() => ({ status: 200, body: answer }));
    const step = await main(broker, {}, {}, { inProcess });
    const data = expectOneSafeError(step);
    expect(data).toContain(problem);
    expect(data).toContain("The token it carried has been revoked.");
    expect(broker.revocations()).toHaveLength(1);
    expect(step.state).toEqual({});
    expect(step.outputs).toEqual({});
  });

  it("a good answer: outputs (installation-id and app-slug included), state, one masked token, exit 0", async () => {
    const answer = goodAnswer();
    const broker = await canned(() => ({ status: 200, body: answer }));
    const step = await main(broker);
    expect(step.exitCode).toBe(0);
    expect(commands(step)).toEqual(["add-mask", "add-mask"]); // the job's OIDC token, then the installation token
    expectMaskedFirst(step, answer.token as string);
    expect(step.outputs).toEqual({ token: answer.token, "expires-at": answer.expires_at, repository: "octo-org/app", repositories: "octo-org/app", "installation-id": "4242", "app-slug": "tokensmith-release" });
    expect(step.state).toEqual({ token: answer.token, "expires-at": answer.expires_at });
    expect(broker.revocations()).toHaveLength(0);
  });

  it("an older broker's answer (no installation_id, no app_slug): the two outputs are left unset (repositories, the job's own, is the action's)", async () => {
    const { installation_id: _id, app_slug: _slug, ...older } = goodAnswer();
    const broker = await canned(() => ({ status: 200, body: older }));
    const step = await main(broker);
    expect(step.exitCode).toBe(0);
    expect(Object.keys(step.outputs)).toEqual(["token", "expires-at", "repository", "repositories"]);
  });
});

describe("item 6: hints for the workflow's owner; the table's retryable codes retried", () => {
  it.each(firstInChild(["invalid_json", "missing_required_fields", "payload_too_large", "sign_failed", "unauthorized", "webhook_disabled"].map((code): [string] => [code])))(
    "%s (a code a correct action never causes) says: version or URL mismatch",
    async (code, inProcess) => {
      const broker = await canned(() => ({ status: 400, body: { error: code } }));
      const step = await main(broker, {}, {}, { inProcess });
      const data = expectOneSafeError(step);
      expect(data).toContain(MISMATCH);
      expect(data).toContain(`(error: ${code}, HTTP 400 from ${broker.url})`);
      expect(broker.tokenPosts()).toBe(1);
    },
  );

  it("408 request_timeout is retried, then the token is taken", async () => {
    const broker = await canned((call) => (call === 1 ? { status: 408, body: { error: "request_timeout" } } : { status: 200, body: goodAnswer() }));
    const step = await main(broker);
    expect(step.exitCode).toBe(0);
    expect(broker.tokenPosts()).toBe(2);
    expect(step.lines).toContain(`tokensmith: attempt 1: ${broker.url} answered 408 request_timeout`);
  });

  it("503 server_busy waits its Retry-After; a 408 four times fails with the workflow hint after 4 attempts", async () => {
    const busy = await canned((call) => (call === 1 ? { status: 503, body: { error: "server_busy" }, headers: { "retry-after": "1" } } : { status: 200, body: goodAnswer() }));
    const ok = await main(busy);
    expect(ok.exitCode).toBe(0);
    expect(ok.lines).toContain("tokensmith: retrying in 1000 ms (attempt 2 of 4)");
    expect(busy.tokenPosts()).toBe(2);

    const slow = await canned(() => ({ status: 408, body: { error: "request_timeout" } }));
    const step = await main(slow);
    const data = expectOneSafeError(step);
    expect(data).toBe(`tokensmith: ${WORKFLOW_HINTS.request_timeout} (error: request_timeout, HTTP 408 from ${slow.url}) after 4 attempts`);
    expect(slow.tokenPosts()).toBe(4);
  });

  it("a 4xx the table calls final (403 repo_not_allowed) is not retried", async () => {
    const broker = await canned(() => ({ status: 403, body: { error: "repo_not_allowed" } }));
    const step = await main(broker);
    expect(expectOneSafeError(step)).toContain("octo-org/app is not in the broker's ALLOWED_REPOSITORIES");
    expect(broker.tokenPosts()).toBe(1);
  });
});

describe("item 7: one bound on the step's time, kept when both brokers hang", () => {
  it("timeout-seconds: 5 with both brokers silent (30 s per request otherwise): the step fails within the bound", async () => {
    const primary = await startSilentServer();
    const fallback = await startSilentServer();
    closers.push(() => primary.close(), () => fallback.close());
    const broker = await canned(() => ({ status: 500, body: {} })); // the ID-token endpoint only
    const started = Date.now();
    const step = await runStep("main", {
      node,
      inputs: { "auth-mode": "public-app", "broker-url": primary.url, "broker-fallback-url": fallback.url, "timeout-seconds": "5" },
      env: { ...broker.jobEnv(), TOKENSMITH_ATTEMPT_TIMEOUT_MS: "30000" },
      killAfterMs: 60_000,
    });
    const elapsed = Date.now() - started;
    const data = expectOneSafeError(step);
    expect(data).toMatch(/^tokensmith: could not reach the broker at .*ETIMEDOUT.*the step's 5 s bound, timeout-seconds, leaves no time for more\): check broker-url and broker-fallback-url, or retry later\.$/);
    expect(elapsed).toBeGreaterThanOrEqual(5000);
    expect(elapsed).toBeLessThan(20_000); // 5 s, plus process start-up on a loaded machine
    expect(primary.connections()).toBe(1); // the primary held the whole bound; the fallback got no time
    expect(broker.tokenPosts()).toBe(0);
  }, 90_000);

  it.each(firstInChild<[string]>([["0"], ["3601"], ["1.5"], ["ninety"]]))("timeout-seconds %j fails at once, naming the range", async (value, inProcess) => {
    const broker = await canned(() => ({ status: 200, body: goodAnswer() }));
    const step = await main(broker, { "timeout-seconds": value }, {}, { inProcess });
    expect(expectOneSafeError(step)).toBe(`tokensmith: timeout-seconds must be a whole number of seconds from 1 to 3600, not "${value}".`);
    expect(broker.tokenPosts()).toBe(0);
  });
});
