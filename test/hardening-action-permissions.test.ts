// Issue 27 item 1, the action's side: the bundled action (dist/main on Node 24, run as the runner
// runs it) with permission-<name> inputs, against the real broker and the simulator (the token is
// narrowed, the permissions output says so, a request beyond the grant fails the step with the
// broker's detail) and against a canned broker whose answers do not honour the request (the step
// refuses them and revokes the token).
import { afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { runStep, type StepResult } from "./support/action-runner.js";
import { node24 } from "./support/action-node24.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { goodAnswer, runnerData, startCannedBroker, type CannedBroker, type TokenHandler } from "./support/canned-broker.js";
import { runnerJobEnv } from "./support/runner-env.js";

let node = "";
beforeAll(() => {
  node = node24();
}, 360_000);

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const errorLines = (step: StepResult) => step.lines.filter((line) => line.startsWith("::error::")).map(runnerData);

describe("permission inputs through dist/ on Node 24, at the real broker", () => {
  // The simulator and a broker per test for this block only: the canned-broker block below uses neither.
  const t = brokerPerTest();
  const mints = () => t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens"));
  const mainAtBroker = (inputs: Record<string, string>): Promise<StepResult> =>
    runStep("main", { node, inputs: { "auth-mode": "public-app", "broker-url": t.broker.url, ...inputs }, env: runnerJobEnv(t.fx.sim), killAfterMs: 60_000 });

  it("permission-contents: read → the mint asks for exactly that, the token holds it, the permissions output is the answer's", async () => {
    const main = await mainAtBroker({ "permission-contents": "read" });
    expect(main.exitCode).toBe(0);
    expect((mints()[0]?.body as { permissions?: unknown }).permissions).toEqual({ contents: "read" });
    const token = main.outputs.token!;
    expect(t.fx.sim.tokens.get(token)?.permissions).toEqual({ contents: "read" });
    expect(JSON.parse(main.outputs.permissions!)).toEqual({ contents: "read" });
  });

  it("two inputs, hyphenated: permission-pull-requests: write with permission-contents: read", async () => {
    const main = await mainAtBroker({ "permission-contents": "read", "permission-pull-requests": "write" });
    expect(main.exitCode).toBe(0);
    expect(t.fx.sim.tokens.get(main.outputs.token!)?.permissions).toEqual({ contents: "read", pull_requests: "write" });
  });

  it("no permission input → the body has no permissions; the whole grant, and the output shows it", async () => {
    const main = await mainAtBroker({});
    expect(main.exitCode).toBe(0);
    expect(mints()).toHaveLength(1);
    expect(JSON.parse(main.outputs.permissions!)).toEqual({ contents: "write", pull_requests: "write" });
  });

  it("beyond the grant → the step fails with the hint and the broker's detail, one POST, no token minted", async () => {
    const main = await mainAtBroker({ "permission-issues": "write" });
    expect(main.exitCode).not.toBe(0);
    const [line, ...more] = errorLines(main);
    expect(more).toEqual([]);
    expect(line).toContain("The step's permission-<name> inputs ask for more than the broker grants octo-org/app");
    expect(line).toContain('The broker says: "issues: write withheld by TOKEN_PERMISSIONS (not granted), installation (read only)".');
    expect(line).toContain("(error: permissions_not_granted, HTTP 403 from");
    expect(line).not.toMatch(/[\r\n]/);
    expect(t.fx.sim.requests.filter((r) => r.path === "/_actions/idtoken")).toHaveLength(1); // not retried
    expect(mints()).toHaveLength(0);
    expect(main.outputs.token).toBeUndefined();
  });

  it("permission-workflows: read fails the step before the broker is asked", async () => {
    const main = await mainAtBroker({ "permission-workflows": "read" });
    expect(main.exitCode).not.toBe(0);
    expect(errorLines(main)).toEqual(["tokensmith: permission-workflows: permission workflows cannot be read: the platform offers write."]);
    expect(t.fx.sim.requests.filter((r) => r.path === "/_actions/idtoken")).toHaveLength(0);
  });
});

describe("a broker that does not honour the request (canned answers through dist/ on Node 24)", () => {
  async function canned(onToken: TokenHandler): Promise<CannedBroker> {
    const broker = await startCannedBroker(onToken);
    closers.push(() => broker.close());
    return broker;
  }
  const mainAt = (broker: CannedBroker, inputs: Record<string, string>) =>
    runStep("main", { node, inputs: { "auth-mode": "public-app", "broker-url": broker.url, ...inputs }, env: broker.jobEnv(), killAfterMs: 60_000 });

  it("sends permissions in the body only when an input is set", async () => {
    const broker = await canned(() => ({ status: 200, body: goodAnswer({ permissions: { contents: "read" } }) }));
    expect((await mainAt(broker, { "permission-contents": "read" })).exitCode).toBe(0);
    expect((await mainAt(broker, {})).exitCode).toBe(0);
    const bodies = broker.requests.filter((r) => r.method === "POST").map((r) => JSON.parse(r.body) as Record<string, unknown>);
    expect(bodies.map((body) => body.permissions)).toEqual([{ contents: "read" }, undefined]);
  });

  it("sends permissions and policy-rule's rule together when both are set", async () => {
    const broker = await canned(() => ({ status: 200, body: goodAnswer({ permissions: { contents: "read" } }) }));
    expect((await mainAt(broker, { "permission-contents": "read", "policy-rule": "pull-requests" })).exitCode).toBe(0);
    const bodies = broker.requests.filter((r) => r.method === "POST").map((r) => JSON.parse(r.body) as Record<string, unknown>);
    expect(bodies.map((body) => [body.permissions, body.rule])).toEqual([[{ contents: "read" }, "pull-requests"]]);
  });

  it.each([
    ["no permissions in the answer (a broker too old for the inputs mints its whole grant)", goodAnswer(), "the answer does not say which permissions the token has"],
    ["a token with more than asked", goodAnswer({ permissions: { contents: "write" } }), "the token has contents: write, beyond what the step's permission-<name> inputs asked for (contents: read)"],
    ["a token with another permission", goodAnswer({ permissions: { contents: "read", administration: "write" } }), "the token has administration: write, beyond what"],
  ])("%s → refused, the token masked and revoked at once, no output", async (_name, answer, problem) => {
    const broker = await canned(() => ({ status: 200, body: answer }));
    const main = await mainAt(broker, { "permission-contents": "read" });
    expect(main.exitCode).not.toBe(0);
    const [line, ...more] = errorLines(main);
    expect(more).toEqual([]);
    expect(line).toContain(problem);
    expect(line).toContain("The token it carried has been revoked.");
    expect(main.lines.indexOf(`::add-mask::${answer.token as string}`)).toBeGreaterThanOrEqual(0);
    expect(broker.revocations()).toHaveLength(1);
    expect(broker.revocations()[0]!.authorization).toBe(`Bearer ${answer.token as string}`);
    expect(broker.tokenPosts()).toBe(1);
    expect(main.outputs.token).toBeUndefined();
  });

  it("a hostile detail is shown quoted and escaped on one line, nothing becomes a workflow command", async () => {
    const broker = await canned(() => ({ status: 403, body: { error: "permissions_not_granted", detail: "x\n::add-mask::oops\u202e" } }));
    const main = await mainAt(broker, { "permission-contents": "read" });
    expect(main.exitCode).not.toBe(0);
    expect(main.lines.filter((l) => l.startsWith("::") && !l.startsWith("::error::") && !l.startsWith("::add-mask::ey"))).toEqual([]);
    const [line] = errorLines(main);
    expect(line).toContain('The broker says: "x\\u000a::add-mask::oops\\u202e".');
  });
});
