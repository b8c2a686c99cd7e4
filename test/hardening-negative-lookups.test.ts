// Issue 24, item 2: replays for repositories where the App is not installed cost (almost) nothing.
// Anyone can mint an OIDC token for our audience from a repository of their own; replaying it used
// to cost one uncached installation lookup (a point of the App's budget) every time, so a flood
// spent the App's budget and real callers got 502 with Retry-After. Over HTTP, against the
// simulator at GitHub's own points budget (900 a minute, shared by the broker's pacer):
// - a flood of replays for a non-installed repository, past the App's budget (scaled down on both
//   sides to 100 points in 6 s, so that is 150 replays, not 1,000): one lookup, while an installed
//   repository's jobs keep getting tokens;
// - many non-installed repositories of one owner: that owner's lookups that find nothing are capped
//   at its share (503 installation_lookups_limited with Retry-After past it), installed jobs
//   unaffected; an installed owner's cold burst past the share is not refused;
// - the "not installed" answer is dropped by an `installation`/`installation_repositories` delivery
//   (whose answer stays the API's `{ok: true, ignored}`), and is keyed by repository id.
import { createHmac, randomUUID } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { ERROR_CODES } from "../shared/error-codes.js";
import { postJson, startBroker } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const WEBHOOK_SECRET = "negative-lookups-webhook-secret-0123";
const secrets: string[] = [WEBHOOK_SECRET];
const t = brokerPerTest({ secrets, env: { HOST_WEBHOOK_SECRET: WEBHOOK_SECRET } });

async function sign(repository: string): Promise<string> {
  const token = await t.fx.sim.oidc.sign({ repository });
  secrets.push(token);
  return token;
}

async function exchange(oidcToken: string, repository: string, brokerUrl = t.broker.url) {
  const [owner, repo] = repository.split("/");
  const res = await postJson(`${brokerUrl}/token`, { oidcToken, owner, repo });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

const lookupsOf = (owner: string) => t.fx.sim.requests.filter((r) => r.method === "GET" && r.path.startsWith(`/repos/${owner}/`) && r.path.endsWith("/installation")).length;
const appPoints = () => t.fx.sim.requests.filter((r) => r.auth.kind === "app").reduce((sum, r) => sum + (r.method === "GET" ? 1 : 5), 0);

/** Runs `count` calls of `one`, at most `concurrency` at once. */
async function pool<T>(count: number, concurrency: number, one: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await one(i);
      }
    }),
  );
  return results;
}

/** An installed repository's job, asking for its token between the replays. */
const INSTALLED_EVERY = 20;

/**
 * `count` replays (at most `concurrency` at once), and after every INSTALLED_EVERY-th one a job of
 * the installed repository asks for its token: the replays' answers, and the jobs' answers
 * (status, with Retry-After when refused).
 */
async function floodWithJobs(count: number, concurrency: number, replay: (i: number) => Promise<{ status: number; body: Record<string, unknown>; headers: Headers }>, every = INSTALLED_EVERY, brokerUrl = t.broker.url) {
  const jobs: string[] = [];
  const answers = await pool(count, concurrency, async (i) => {
    const answer = await replay(i);
    if (i % every === 0) {
      // Each job its own OIDC token: one token mints once (docs/security.md).
      const res = await exchange(await sign("octo-org/app"), "octo-org/app", brokerUrl);
      jobs.push(res.status === 200 ? "200" : `${res.status} retry-after ${res.headers.get("retry-after")}`);
    }
    return answer;
  });
  return { answers, jobs };
}

function tally(answers: Array<{ status: number; body: Record<string, unknown> }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status, body } of answers) counts[`${status} ${String(body?.error ?? "ok")}`] = (counts[`${status} ${String(body?.error ?? "ok")}`] ?? 0) + 1;
  return counts;
}

async function deliver(event: string, payload: unknown) {
  const raw = JSON.stringify(payload);
  const signature = `sha256=${createHmac("sha256", WEBHOOK_SECRET).update(raw).digest("hex")}`;
  const response = await fetch(`${t.broker.url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": event, "x-github-delivery": randomUUID(), "x-hub-signature-256": signature },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as unknown };
}

describe("replays for a repository without the App", () => {
  it("a flood of replays of one token past the App's budget costs one installation lookup; the installed repository's jobs keep getting tokens", async () => {
    // GitHub's budget and window scaled down on both sides (100 points in 6 s, not 900 in a
    // minute; test/releases-pages.test.ts scales the window so too): 150 replays are past the
    // budget as 1,000 are past 900, for a seventh of the HTTP round trips, and the installed
    // owner's mints, spread while the flood's owner has points in the window, wait seconds, not a minute.
    const [budget, windowMs, replays] = [100, 6_000, 150];
    const limits = t.fx.sim.limits.values;
    const before = [limits.pointsPerMinute, limits.pointsWindowMs] as const;
    const broker = await startBroker({ ...t.fx.env, HOST_WEBHOOK_SECRET: WEBHOOK_SECRET, UPSTREAM_POINTS_PER_MINUTE: String(budget) }, { timing: { pointsWindowMs: windowMs } });
    [limits.pointsPerMinute, limits.pointsWindowMs] = [budget, windowMs];
    try {
      const oidcToken = await sign("evil-org/payload");
      // One at a time: concurrent replays would share one lookup in flight; an attacker need not send them together.
      const { answers, jobs } = await floodWithJobs(replays, 1, () => exchange(oidcToken, "evil-org/payload", broker.url), INSTALLED_EVERY, broker.url);
      const figures = { flood: tally(answers), lookupsForTheFlood: lookupsOf("evil-org"), installedJobs: tally(jobs.map((status) => ({ status: 0, body: { error: status } }))) };
      const installedJobs = Math.ceil(replays / INSTALLED_EVERY);
      expect(figures).toEqual({ flood: { "404 app_not_installed": replays }, lookupsForTheFlood: 1, installedJobs: { "0 200": installedJobs } });
      // The flood spent one point of the App's budget; the rest is the installed jobs' lookup and mints.
      expect(appPoints()).toBe(1 + 1 + 5 * installedJobs);
    } finally {
      [limits.pointsPerMinute, limits.pointsWindowMs] = before;
      t.logs.push(...broker.logs);
      await broker.close();
    }
  }, 60_000);

  it("many repositories of one owner: its uncached lookups stop at its share (503 with Retry-After), the installed jobs are unaffected", async () => {
    // A tenth of UPSTREAM_POINTS_PER_MINUTE (GitHub's 900) a minute: 90 lookups.
    const share = 90;
    const tokens = await Promise.all(Array.from({ length: 150 }, (_, i) => sign(`many-org/repo-${i}`)));
    // The installed owner's jobs at most a tenth of its part of the budget in a tenth of the window
    // (12 mints, 60 points): a faster burst while this owner floods is spread by design
    // (docs/operations.md#fair-shares), which test/fair-shares.test.ts covers.
    // Each token replayed once after its first use (300 replays of 150): the share is spent by the
    // first use of each, and a replay finds either the remembered answer or the share still spent.
    const [replays, every] = [300, 25];
    const { answers, jobs } = await floodWithJobs(replays, 25, (i) => exchange(tokens[i % tokens.length]!, `many-org/repo-${i % tokens.length}`), every);
    expect(lookupsOf("many-org")).toBe(share);
    const counts = tally(answers);
    // Beside the lookup share (503), the owner's burst is also held to its share of the App's points
    // while another owner is active (429 installation_tokens_limited, at once: docs/operations.md#fair-shares),
    // and a replay of a token whose first use is still waiting is a replay (409).
    expect(Object.keys(counts).sort()).toEqual(expect.arrayContaining(["404 app_not_installed", "503 installation_lookups_limited"]));
    for (const key of Object.keys(counts)) expect(["404 app_not_installed", "409 oidc_token_replayed", "429 installation_tokens_limited", "503 installation_lookups_limited"]).toContain(key);
    expect(counts["404 app_not_installed"]).toBeGreaterThanOrEqual(share);
    // Each refusal its code and a Retry-After of 1…60 s (one expect for all: hundreds of them).
    const limited = answers.filter((a) => a.status === 503 || a.status === 429).map((a) => ({ status: a.status, body: a.body, wait: Number(a.headers.get("retry-after")) }));
    const wrong = limited.filter(({ status, body, wait }) => body?.error !== (status === 503 ? "installation_lookups_limited" : "installation_tokens_limited") || Object.keys(body).length !== 1 || !(wait >= 1 && wait <= 60));
    expect(wrong).toEqual([]);
    expect(ERROR_CODES.installation_lookups_limited).toMatchObject({ status: 503, retryable: true });
    expect(jobs).toEqual(new Array(replays / every).fill("200"));
    // Another owner is not limited by this one's share.
    const elsewhere = await exchange(await sign("other-owner/tool"), "other-owner/tool");
    expect(elsewhere.status).toBe(404);
    expect(lookupsOf("other-owner")).toBe(1);
  }, 60_000);
});

describe("an installed owner's cold burst", () => {
  it("is never refused by the owner's share: a lookup that finds the App is given back", async () => {
    // A budget of 100 on both sides: a share of 10 lookups; 14 installed repositories asked for at once.
    t.broker.env.UPSTREAM_POINTS_PER_MINUTE = "100";
    t.fx.sim.limits.values.pointsPerMinute = 100;
    try {
      const names = Array.from({ length: 14 }, (_, i) => `repo-${i}`);
      for (const name of names) t.fx.sim.repository("wide-org", name);
      t.fx.sim.addInstallation({ appId: t.fx.app.id, account: "wide-org", permissions: { contents: "write", metadata: "read" }, repositories: names });
      const tokens = await Promise.all(names.map((name) => sign(`wide-org/${name}`)));
      const answers = await Promise.all(names.map((name, i) => exchange(tokens[i]!, `wide-org/${name}`)));
      expect(answers.map((a) => a.status)).toEqual(new Array(14).fill(200));
      expect(lookupsOf("wide-org")).toBe(14);
    } finally {
      t.fx.sim.limits.values.pointsPerMinute = 900;
    }
  });
});

describe("the cached answer is dropped when the App's installations change", () => {
  it.each(["installation", "installation_repositories"])("an %s delivery drops it: the next job finds the new installation at once; the answer stays the API's", async (event) => {
    const repository = `late-${event}/tool`;
    const [owner] = repository.split("/") as [string];
    const account = t.fx.sim.repository(owner, "tool");
    const oidcToken = await sign(repository);
    expect((await exchange(oidcToken, repository)).status).toBe(404);
    expect((await exchange(oidcToken, repository)).status).toBe(404);
    expect(lookupsOf(owner)).toBe(1);

    // Installed now: the cached answer still stands (no delivery yet), without a lookup.
    const installationId = t.fx.sim.addInstallation({ appId: t.fx.app.id, account: owner, permissions: { contents: "write", metadata: "read" }, repositories: ["tool"] });
    expect((await exchange(oidcToken, repository)).status).toBe(404);
    expect(lookupsOf(owner)).toBe(1);

    const answer = await deliver(event, { action: event === "installation" ? "created" : "added", installation: { id: installationId, account: { login: owner, id: account.ownerId } } });
    expect(answer).toEqual({ status: 200, body: { ok: true, ignored: event } });
    const res = await exchange(oidcToken, repository);
    expect(res.status).toBe(200);
    expect(lookupsOf(owner)).toBe(2);
  });

  it("a delivery for another account keeps it", async () => {
    const oidcToken = await sign("kept-org/tool");
    expect((await exchange(oidcToken, "kept-org/tool")).status).toBe(404);
    const answer = await deliver("installation", { action: "created", installation: { id: 1, account: { login: "someone-else", id: 987_654_321 } } });
    expect(answer).toEqual({ status: 200, body: { ok: true, ignored: "installation" } });
    expect((await exchange(oidcToken, "kept-org/tool")).status).toBe(404);
    expect(lookupsOf("kept-org")).toBe(1);
  });

  it("it is keyed by repository id: a repository deleted and re-created under the App is looked up afresh", async () => {
    const old = t.fx.sim.repository("phoenix-neg", "tool");
    const before = await sign("phoenix-neg/tool");
    expect((await exchange(before, "phoenix-neg/tool")).status).toBe(404);
    t.fx.sim.deleteRepository("phoenix-neg", "tool");
    t.fx.sim.addInstallation({ appId: t.fx.app.id, account: "phoenix-neg", permissions: { contents: "write", metadata: "read" }, repositories: ["tool"] });
    expect(t.fx.sim.repository("phoenix-neg", "tool").id).not.toBe(old.id);
    const after = await sign("phoenix-neg/tool");
    const res = await exchange(after, "phoenix-neg/tool");
    expect(res.status).toBe(200);
    expect(lookupsOf("phoenix-neg")).toBe(2);
  });
});
