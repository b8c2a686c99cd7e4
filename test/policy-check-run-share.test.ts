// Issue 37 items 1 and 2 over HTTP through the simulator, in-process queue: pull_request deliveries
// (POLICY_CHECK_RUNS on) run from the check-run queue; a pull request that changes no policy file
// costs no mint (its files are compared with the installation's kept reader token) and never takes
// another owner's /token budget; every delivery is claimed (id and signed body), so a replay makes
// no second check run; and one head sha gets one check run, whichever deliveries name it. Pull
// requests that do change a policy file: two checks at a time, and their App calls within the check
// runs' share of the App's budget, seen at the simulator, while another owner's /token answers 200.
import { describe, expect, it } from "@jest/globals";
import { randomUUID } from "node:crypto";
import type { HeldAnswer, RecordedRequest } from "../simulator/index.js";
import { postJson, startBroker } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { pullRequestChanging as changing } from "./support/policy-pull-request.js";
import { INSTALLED_PERMISSIONS } from "./support/fixtures.js";
import { signatureFor } from "../server/webhook/verify-signature.js";

const SECRET = "check-run-share-secret-0123456789abcdef";
const OTHER = "other-org";
const t = brokerPerTest({
  // Policies read where they exist (the default), so /token and the check runs share one reader token per installation.
  env: { HOST_WEBHOOK_SECRET: SECRET, POLICY_CHECK_RUNS: "true", TOKEN_POLICY: "optional" },
  setup: (fx) => {
    fx.sim.installation(fx.installationId).permissions = { ...fx.sim.installation(fx.installationId).permissions, checks: "write" };
    fx.sim.git.createBranch("octo-org/app", "main", { files: { "README.md": "# app\n" } });
    fx.sim.addInstallation({ appId: fx.app.id, account: OTHER, permissions: { ...INSTALLED_PERMISSIONS }, repositories: ["lib"] });
    fx.sim.git.createBranch(`${OTHER}/lib`, "main", { files: { "README.md": "# lib\n" } });
  },
});

let branches = 0;
/** A pull request on a new branch of octo-org/app whose head changes `path` (a policy file or not). */
const pullRequestChanging = (path: string, text: string) => changing(t.fx.sim, { repository: "octo-org/app", branch: `share-${++branches}` }, path, text);

/** A signed pull_request delivery as GitHub sends it (base and head shas). */
function pullRequestBody(pr: { number: number; headSha: string }, action = "opened"): string {
  const repo = t.fx.sim.repository("octo-org", "app");
  return JSON.stringify({
    action, number: pr.number,
    pull_request: { number: pr.number, head: { sha: pr.headSha, ref: "x" }, base: { ref: "main", sha: t.fx.sim.git.pullRequest("octo-org/app", pr.number).mergedBaseSha } },
    repository: { id: repo.id, name: "app", full_name: "octo-org/app", owner: { login: "octo-org", id: repo.ownerId } },
    installation: { id: t.fx.installationId },
  });
}

async function deliver(raw: string, delivery: string = randomUUID(), event = "pull_request", url = t.broker.url) {
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": event, "x-github-delivery": delivery, "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const outcomes = (logs = t.broker.logs) => logs.filter((line) => /policy check run (created|skipped|failed)/.test(line));
/** Waits until `count` checks logged their outcome (the work runs after the answer). */
async function checksDone(count: number, logs = t.broker.logs): Promise<void> {
  for (let waited = 0; waited < 60_000; waited += 20) {
    if (outcomes(logs).length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${outcomes(logs).length} of ${count} policy check outcomes logged`);
}

const mints = (installationId: number) => t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith(`/app/installations/${installationId}/access_tokens`));
const lookups = () => t.fx.sim.requests.filter((r) => r.method === "GET" && /\/(installation|app\/installations\/\d+)$/.test(r.path));
const DUPLICATE = { ok: true, event: "pull_request", skipped: "duplicate_delivery", duplicate: true };

describe("pull requests that change no policy file", () => {
  it("160 deliveries: no mint, two contents reads each, and another owner's /token answered 200 meanwhile", async () => {
    const N = 160;
    const prs = Array.from({ length: N }, (_, i) => pullRequestChanging(`src/file-${i}.ts`, `export const n = ${i};\n`));
    // One /token of octo-org first: its policy read keeps the installation's reader token, which the checks reuse.
    expect((await postJson(`${t.broker.url}/token`, { oidcToken: await t.fx.sim.oidc.sign({ repository: "octo-org/app" }), owner: "octo-org", repo: "app" })).status).toBe(200);
    t.fx.sim.clearRequests();

    const bodies = prs.map((pr) => pullRequestBody(pr));
    const otherTokens: Array<Promise<number>> = [];
    const answers = await Promise.all(bodies.map(async (raw, i) => {
      if (i % 32 === 0) otherTokens.push(t.fx.sim.oidc.sign({ repository: `${OTHER}/lib` }).then((oidcToken) => postJson(`${t.broker.url}/token`, { oidcToken, owner: OTHER, repo: "lib" })).then((r) => r.status));
      return (await deliver(raw)).status;
    }));
    expect(answers).toEqual(Array(N).fill(202));
    expect(await Promise.all(otherTokens)).toEqual([200, 200, 200, 200, 200]);
    await checksDone(N);

    expect(outcomes().filter((line) => line.includes("no policy file changed"))).toHaveLength(N);
    expect(mints(t.fx.installationId)).toHaveLength(0);
    // No installation lookup for the pull requests (the other owner's /token looks its own up).
    expect(lookups().filter((r) => !r.path.includes(OTHER))).toHaveLength(0);
    const forPullRequests = t.fx.sim.requests.filter((r) => r.path.startsWith("/repos/octo-org/app/"));
    expect(forPullRequests.every((r) => r.method === "GET" && r.path === "/repos/octo-org/app/contents/.github/tokensmith.yml")).toBe(true);
    expect(forPullRequests).toHaveLength(2 * N); // head and base of each
    expect(t.fx.sim.git.checkRuns).toHaveLength(0);
  });

  it("a cold installation: one reader mint for many deliveries, never a check token", async () => {
    const prs = Array.from({ length: 20 }, (_, i) => pullRequestChanging(`docs/cold-${i}.md`, `${i}\n`));
    const answers = await Promise.all(prs.map(async (pr) => (await deliver(pullRequestBody(pr))).status));
    expect(answers).toEqual(Array(20).fill(202));
    await checksDone(20);
    const minted = mints(t.fx.installationId);
    expect(minted).toHaveLength(1);
    expect(minted[0]!.body).toEqual({ permissions: { contents: "read" } });
  });
});

/**
 * The check-run creations' answers held in pairs: each is held until another check run is asked
 * for (or all `total` were), so two checks in flight at once is reached whenever the queue allows
 * it, and a third would be asked for while both are held.
 */
function heldInPairs(total: number): HeldAnswer & { first: Promise<void> } {
  const held: Array<() => void> = [];
  let asked = 0;
  let firstAsked!: () => void;
  const first = new Promise<void>((resolve) => (firstAsked = resolve));
  return {
    first,
    // Read by the simulator once per answer, after the route ran (the check run exists) and before it is sent.
    get until() {
      asked += 1;
      firstAsked();
      const answer = new Promise<void>((resolve) => held.push(resolve));
      if (held.length >= 2 || asked >= total) for (const release of held.splice(0)) release();
      return answer;
    },
  };
}

/**
 * The most checks in flight at once as the simulator saw them, in the order requests arrived: a
 * check from its first read (its head's policy file) to its token's revocation (its last call).
 * The queue starts a check only once another ended, after the platform answered that one's last
 * call, so a bound of n holds in this order whatever the timing.
 */
function mostInFlight(requests: readonly RecordedRequest[], heads: readonly string[]): number {
  const events: number[] = new Array<number>(requests.length + 1).fill(0);
  for (const head of heads) {
    const start = requests.findIndex((r) => r.method === "GET" && r.path.endsWith("/contents/.github/tokensmith.yml") && r.query.ref === head);
    const created = requests.find((r) => r.method === "POST" && r.path.endsWith("/check-runs") && (r.body as { head_sha?: string }).head_sha === head);
    const token = created?.auth.kind === "installation" ? created.auth.token : undefined;
    const end = requests.findIndex((r) => r.method === "DELETE" && r.path === "/installation/token" && r.auth.kind === "installation" && r.auth.token === token);
    if (start < 0 || end < start) throw new Error(`no first read and revocation in order for head ${head}`);
    events[start]! += 1;
    events[end + 1]! -= 1;
  }
  let now = 0;
  let most = 0;
  for (const change of events) most = Math.max(most, (now += change));
  return most;
}

describe("pull requests that change a policy file", () => {
  // The App's budget at 100 points a window, so the check runs' share is 10: two mints (5 each).
  // The window scaled down to 2 s on both sides (broker and simulator) to keep the test short.
  const BUDGET = 100;
  const SHARE = BUDGET / 10;
  const WINDOW_MS = 2_000;

  it("many at once: two checks in flight at most, their App calls within a tenth of the budget in every window, another owner's /token 200", async () => {
    const N = 8;
    const env = { ...t.fx.env, HOST_WEBHOOK_SECRET: SECRET, POLICY_CHECK_RUNS: "true", TOKEN_POLICY: "optional", UPSTREAM_POINTS_PER_MINUTE: String(BUDGET) };
    // A check-run creation's answer is held until the other check in flight asks for its own, which
    // may first wait a window for its share: the platform's answers get 30 s, not the suite's 2 s.
    const broker = await startBroker(env, { timing: { pointsWindowMs: WINDOW_MS, requestDeadlineMs: 20_000, upstreamTimeoutMs: 30_000 } });
    const limits = t.fx.sim.limits.values;
    const before = { pointsPerMinute: limits.pointsPerMinute, pointsWindowMs: limits.pointsWindowMs };
    Object.assign(limits, { pointsPerMinute: BUDGET, pointsWindowMs: WINDOW_MS });
    try {
      const prs = Array.from({ length: N }, (_, i) => pullRequestChanging(".github/tokensmith.yml", `rules:\n  - name: pr-${i}\n    if: {event: pull_request}\n    permissions: {contents: read}\n`));
      // A /token of octo-org first: its policy read keeps the reader token the checks read with.
      expect((await postJson(`${broker.url}/token`, { oidcToken: await t.fx.sim.oidc.sign({ repository: "octo-org/app" }), owner: "octo-org", repo: "app" })).status).toBe(200);
      t.fx.sim.clearRequests();
      const held = heldInPairs(N);
      t.fx.sim.faults.add({ method: "POST", path: "/repos/octo-org/app/check-runs", respond: held });

      const answers = await Promise.all(prs.map(async (pr) => (await deliver(pullRequestBody(pr), randomUUID(), "pull_request", broker.url)).status));
      expect(answers).toEqual(Array(N).fill(202));
      // A check run is being created (its answer held) and the others wait for a slot or their
      // share: another owner's jobs get their tokens meanwhile.
      await held.first;
      const other = await Promise.all(Array.from({ length: 4 }, async () => {
        const oidcToken = await t.fx.sim.oidc.sign({ repository: `${OTHER}/lib` });
        return (await postJson(`${broker.url}/token`, { oidcToken, owner: OTHER, repo: "lib" })).status;
      }));
      expect(other).toEqual([200, 200, 200, 200]);
      // Each check's last call is its token's revocation, after its outcome line: wait for all N at the platform.
      const revocations = () => t.fx.sim.requests.filter((r) => r.method === "DELETE" && r.path === "/installation/token" && r.response !== undefined).length;
      for (let waited = 0; revocations() < N; waited += 20) {
        if (waited >= 60_000) throw new Error(`${revocations()} of ${N} checks revoked their token`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(outcomes(broker.logs).filter((line) => line.includes("policy check run created"))).toHaveLength(N);
      const heads = prs.map((pr) => pr.headSha);
      expect(t.fx.sim.git.checkRuns.filter((run) => heads.includes(run.headSha))).toHaveLength(N);
      const requests = [...t.fx.sim.requests];
      expect(mostInFlight(requests, heads)).toBe(2);

      // The checks' App calls: the installation looked up by id (1 point) and a checks: write mint each (5).
      const checkCalls = requests
        .filter((r) => r.auth.kind === "app")
        .flatMap((r) => {
          if (r.method === "GET" && r.path === `/app/installations/${t.fx.installationId}`) return [{ at: r.receivedAt, points: 1 }];
          const permissions = (r.body as { permissions?: Record<string, string> } | undefined)?.permissions;
          if (r.method === "POST" && r.path === `/app/installations/${t.fx.installationId}/access_tokens` && permissions?.checks === "write") return [{ at: r.receivedAt, points: 5 }];
          return [];
        });
      expect(checkCalls.filter((call) => call.points === 5)).toHaveLength(N);
      const spent = checkCalls.reduce((sum, call) => sum + call.points, 0);
      expect(spent).toBeGreaterThan(SHARE); // the share was binding: the checks had to wait for it
      // A call's points stay in the broker's window from before it is sent until a window after
      // its answer, so calls that reached the platform within one window of each other were all
      // counted at once when the last of them was let through: at most the share.
      const mostInAnyWindow = Math.max(...checkCalls.map(({ at }) => checkCalls.filter((call) => call.at <= at && call.at >= at - WINDOW_MS).reduce((sum, call) => sum + call.points, 0)));
      expect(mostInAnyWindow).toBeLessThanOrEqual(SHARE);
    } finally {
      Object.assign(limits, before);
      t.logs.push(...broker.logs);
      await broker.close();
    }
  }, 90_000);
});

describe("replays and heads", () => {
  it("one delivery sent 10 times (same id, then fresh ids) → one check run; the replays answered as duplicates", async () => {
    const pr = pullRequestChanging(".github/tokensmith.yml", "rules:\n  - name: pr\n    if: {event: pull_request}\n    permissions: {contents: read}\n");
    const raw = pullRequestBody(pr);
    const id = randomUUID();
    const first = await deliver(raw, id);
    expect(first).toEqual({ status: 202, body: { ok: true, event: "pull_request", queued: true, repository: "octo-org/app", number: pr.number, delivery: id } });
    const again = [];
    for (let i = 0; i < 4; i += 1) again.push(await deliver(raw, id));
    for (let i = 0; i < 5; i += 1) again.push(await deliver(raw));
    expect(again).toEqual(Array(9).fill({ status: 200, body: DUPLICATE }));
    // The replays were answered without being queued; one more pull request run to its end after them
    // leaves exactly two outcomes (an event to wait on, not a sleep).
    expect((await deliver(pullRequestBody(pullRequestChanging("docs/after.md", "x\n")))).status).toBe(202);
    await checksDone(2);
    expect(outcomes()).toHaveLength(2);
    expect(t.fx.sim.git.checkRuns.filter((run) => run.headSha === pr.headSha)).toEqual([expect.objectContaining({ conclusion: "success", name: "tokensmith policy" })]);
    // The reader (contents read) and one check token (checks write), nothing per replay.
    expect(mints(t.fx.installationId).map((r) => r.body)).toEqual([{ permissions: { contents: "read" } }, { repository_ids: [t.fx.sim.repository("octo-org", "app").id], permissions: { checks: "write" } }]);
  });

  it("two deliveries for one head sha (opened, reopened) → one check run", async () => {
    const pr = pullRequestChanging(".github/tokensmith.yml", "rules: [\n");
    const answers = await Promise.all(["opened", "reopened"].map(async (action) => (await deliver(pullRequestBody(pr, action))).status));
    expect(answers).toEqual([202, 202]);
    await checksDone(2);
    expect(t.fx.sim.git.checkRuns.filter((run) => run.headSha === pr.headSha)).toHaveLength(1);
    expect(outcomes().filter((line) => line.includes("this head was checked already"))).toHaveLength(1);
  });

  it("a check that failed before acting hands its claims back: the platform's redelivery makes the check run", async () => {
    const pr = pullRequestChanging(".github/tokensmith.yml", "rules: [\n");
    const raw = pullRequestBody(pr);
    const id = randomUUID();
    t.fx.sim.faults.add({ method: "POST", path: "/repos/octo-org/app/check-runs", times: 1, respond: { status: 502, body: { message: "Bad Gateway" } } });
    expect((await deliver(raw, id)).status).toBe(202);
    await checksDone(1);
    expect(outcomes().at(-1)).toContain("policy check run failed");
    expect(t.fx.sim.git.checkRuns.filter((run) => run.headSha === pr.headSha)).toHaveLength(0);
    // Redelivered from the App's settings (same id, same body): acted on this time.
    expect((await deliver(raw, id)).status).toBe(202);
    await checksDone(2);
    expect(t.fx.sim.git.checkRuns.filter((run) => run.headSha === pr.headSha)).toEqual([expect.objectContaining({ conclusion: "failure" })]);
  });
});

describe("deliveries acted on inside the broker", () => {
  const deliverEvent = (event: string, raw: string) => deliver(raw, randomUUID(), event);
  const drops = () => t.broker.logs.filter((line) => line.includes("policy reader token dropped by an installation change"));

  it("a replayed installation_repositories delivery drops the installation's caches once; the answer stays the API's", async () => {
    const raw = JSON.stringify({ action: "added", installation: { id: t.fx.installationId, account: { login: "octo-org", id: t.fx.sim.repository("octo-org", "app").ownerId } }, repositories_added: [{ id: 1, name: "new", full_name: "octo-org/new" }] });
    const ignored = { status: 200, body: { ok: true, ignored: "installation_repositories" } };
    expect(await deliverEvent("installation_repositories", raw)).toEqual(ignored);
    expect(drops()).toHaveLength(1);
    for (let i = 0; i < 5; i += 1) expect(await deliverEvent("installation_repositories", raw)).toEqual(ignored);
    expect(drops()).toHaveLength(1);
    // Another change of the installation (another body) drops them again.
    expect(await deliverEvent("installation_repositories", raw.replace('"added"', '"removed"'))).toEqual(ignored);
    expect(drops()).toHaveLength(2);
  });

  it("a replayed push of a policy file drops the cached policy once (auto-update off: the answer stays auto_update_disabled)", async () => {
    const repo = t.fx.sim.repository("octo-org", "app");
    const raw = JSON.stringify({
      ref: "refs/heads/main", after: "1".repeat(40), commits: [{ modified: [".github/tokensmith.yml"] }],
      repository: { id: repo.id, name: "app", full_name: "octo-org/app", default_branch: "main", owner: { login: "octo-org", id: repo.ownerId } },
      installation: { id: t.fx.installationId },
    });
    const pushDrops = () => t.broker.logs.filter((line) => line.includes("policy cache dropped by a push"));
    for (let i = 0; i < 4; i += 1) expect(await deliverEvent("push", raw)).toEqual({ status: 200, body: { ok: true, event: "push", skipped: "auto_update_disabled" } });
    expect(pushDrops()).toHaveLength(1);
  });
});
