// Platform faults on the write paths: GraphQL for /sign, the pull request listing and
// update-branch for /webhook. Each ends in the route's answer (for /webhook: the queued job's audit
// line) within the upstream timeout, retried only where docs/design.md#decisions-where-the-contract-was-open allows (the listing is a GET; the
// mutation is never retried, update-branch only after a rate limit's wait).
import { describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { INSTALLED_PERMISSIONS, type TokenFixture } from "./support/fixtures.js";
import { pushAudit, sendPush } from "./support/push-audit.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const TRIGGER = "route-faults-trigger-secret-01234567";
const HOOK = "route-faults-webhook-secret-01234567";
const ACCOUNT = "faults-org";
let installationId: number;
let counter = 0;

const t = brokerPerTest({
  graphql: true,
  secrets: [TRIGGER, HOOK],
  env: { PROCESS_TRIGGER_SECRET: TRIGGER, HOST_WEBHOOK_SECRET: HOOK, AUTO_UPDATE_BRANCHES: "on", UPDATE_BRANCH_PER_MINUTE: "100000", UPDATE_BRANCH_PER_HOUR: "100000" },
  broker: { timing: { upstreamTimeoutMs: 1_000 }, retry: { attempts: 3, baseDelayMs: 10, maxWaitMs: 1500 } },
  setup: (fx) => {
    installationId = fx.sim.addInstallation({ appId: fx.app.id, account: ACCOUNT, permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
  },
});

const inSeconds = (s: number) => String(Math.floor(Date.now() / 1000) + s);
type Respond = Parameters<TokenFixture["sim"]["faults"]["add"]>[0]["respond"];
const FAULTS: Array<[string, Respond]> = [
  ["500", { status: 500, body: { message: "Server Error" } }],
  ["502", { status: 502, body: { message: "Bad Gateway" } }],
  ["503", { status: 503, body: { message: "Service Unavailable" } }],
  ["a hang past the timeout", "hang"],
  ["malformed JSON", "garbage"],
  ["a secondary rate limit", { status: 403, headers: { "retry-after": "60" }, body: { message: "You have exceeded a secondary rate limit." } }],
  ["a primary rate limit", { status: 403, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": inSeconds(3600) }, body: { message: "API rate limit exceeded" } }],
];
const count = (method: string, path: RegExp) => t.fx.sim.requests.filter((r) => r.method === method && path.test(r.path)).length;

describe("/sign: faults on createCommitOnBranch", () => {
  const sign = () => {
    const branch = `release-${++counter}`;
    const head = t.fx.sim.git.createBranch("octo-org/app", branch, { files: { "VERSION": "1\n" } });
    return postJson(`${t.broker.url}/sign`, { repo: "octo-org/app", branch, expected_head_oid: head, message: { headline: "release" }, additions: [{ path: "VERSION", contents: Buffer.from("2\n").toString("base64") }] }, { authorization: `Bearer ${TRIGGER}` });
  };

  it.each(FAULTS)("%s → 502 sign_failed, the mutation sent once", async (_name, respond) => {
    t.fx.sim.faults.add({ method: "POST", path: "/graphql", respond });
    const res = await sign();
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ error: "sign_failed" });
    expect(count("POST", /^\/graphql$/)).toBe(1);
  });
});

describe("/webhook: faults on the pull request listing and on update-branch", () => {
  function repoWithPulls(pulls: number): string {
    const name = `repo-${++counter}`;
    const repository = `${ACCOUNT}/${name}`;
    t.fx.sim.repository(ACCOUNT, name);
    t.fx.sim.git.createBranch(repository, "main");
    for (let i = 0; i < pulls; i += 1) {
      const head = `feature-${i}`;
      t.fx.sim.git.createBranch(repository, head);
      t.fx.sim.git.addPullRequest(repository, { base: "main", head });
    }
    t.fx.sim.git.push(repository, "main", { files: { "NEWS.md": `push ${counter}\n` } }); // the push being delivered
    return repository;
  }

  async function push(repository: string) {
    expect((await sendPush(t.broker.url, HOOK, repository, installationId)).status).toBe(202);
    return pushAudit(t.broker.logs, repository); // the work is queued: its outcome is the job's audit line
  }

  const LISTING = /\/pulls$/;

  it.each(FAULTS.filter(([name]) => name !== "a secondary rate limit"))("listing: %s → the job ends with internal_error, nothing updated", async (_name, respond) => {
    const repository = repoWithPulls(2);
    t.fx.sim.faults.add({ method: "GET", path: LISTING, respond });
    const res = await push(repository);
    expect(res).toMatchObject({ error: "internal_error", updated: [], failed: [] });
    expect(count("PUT", /update-branch$/)).toBe(0);
  });

  it("listing: a persistent 503 is retried (a GET), a far rate-limit reset is not", async () => {
    const repository = repoWithPulls(1);
    const fault = t.fx.sim.faults.add({ method: "GET", path: LISTING, respond: { status: 503, body: { message: "Service Unavailable" } } });
    await push(repository);
    expect(count("GET", LISTING)).toBe(3);
    fault.remove();
    const second = repoWithPulls(1);
    t.fx.sim.clearRequests();
    t.fx.sim.faults.add({ method: "GET", path: LISTING, respond: { status: 429, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": inSeconds(3600) }, body: { message: "API rate limit exceeded" } } });
    await push(second);
    expect(count("GET", LISTING)).toBe(1);
  });

  it("listing: a transient 502 and a short secondary rate limit are retried and the push is handled", async () => {
    const repository = repoWithPulls(2);
    t.fx.sim.faults.add({ method: "GET", path: LISTING, times: 1, respond: { status: 502, body: { message: "Bad Gateway" } } });
    t.fx.sim.faults.add({ method: "GET", path: LISTING, times: 1, respond: { status: 403, headers: { "retry-after": "1" }, body: { message: "You have exceeded a secondary rate limit." } } });
    const res = await push(repository);
    expect(res.updated).toHaveLength(2);
  });

  it.each<[string, Respond, number, string]>([
    ["500", { status: 500, body: { message: "Server Error" } }, 500, "platform_error"],
    ["502", { status: 502, body: { message: "Bad Gateway" } }, 502, "platform_error"],
    ["503", { status: 503, body: { message: "Service Unavailable" } }, 503, "platform_error"],
    ["a hang past the timeout", "hang", 0, "platform_unreachable"],
    // A rate limit is waited for and retried when the wait is at most 15 min (test/webhook-pacing); a longer one fails at once.
    ["a secondary rate limit asking for an hour", { status: 403, headers: { "retry-after": "3600" }, body: { message: "You have exceeded a secondary rate limit." } }, 403, "rate_limited"],
    ["a primary rate limit", { status: 403, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": inSeconds(3600) }, body: { message: "API rate limit exceeded" } }, 403, "rate_limited"],
  ])("update-branch: %s on one pull request fails it without a retry; the ones not yet sent fail fast, never reaching the platform", async (_name, respond, status, word) => {
    const repository = repoWithPulls(3);
    t.fx.sim.faults.add({ method: "PUT", path: /\/pulls\/2\/update-branch$/, respond });
    const res = await push(repository);
    const failed = res.failed as Array<{ number: number; status: number; error: string }>;
    expect(failed).toContainEqual({ number: 2, status, error: word });
    expect(count("PUT", /\/pulls\/2\/update-branch$/)).toBe(1);
    // Update-branch calls wait out the limit's pause (issue 12): a pull request whose call was not
    // sent before the limit arrived is failed as rate_limited without reaching the platform;
    // one sent before it is updated. Which of 1 and 3 is which depends on timing (4 run at once).
    for (const other of failed.filter((f) => f.number !== 2)) {
      expect(other.error).toBe("rate_limited");
      expect(count("PUT", new RegExp(`/pulls/${other.number}/update-branch$`))).toBe(0);
    }
    expect([...(res.updated as number[]), ...failed.map((f) => f.number)].sort()).toEqual([1, 2, 3]);
  });
});
