// The /releases crawl inside GitHub's points budget (issue 12), over HTTP against the simulator:
// a cold crawl that needs more of the App's points than one window holds is paced across windows
// and answered complete, the simulator refusing nothing; a warm crawl reuses its read-only tokens
// and mints nothing until they have 10 minutes left.
//
// Both sides run the same budget over the same window, scaled down from GitHub's 900 points a
// minute so pacing across windows takes seconds: the simulator's pointsPerMinute/pointsWindowMs,
// the broker's UPSTREAM_POINTS_PER_MINUTE and timing.pointsWindowMs.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { getReleases, names, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";

const BUDGET = 30;
// A second: the pacer counts a call in its window until the call has settled, so a shorter window
// shortens the waits without racing the simulator's count.
const WINDOW_MS = 1_000;
/** 12 installations: a listing page (1 point) and 12 mints (60 points) are two windows' worth. */
const ACCOUNTS = names("tiny", 12);

let fx: ReleasesFixture;
const brokers: TestBroker[] = [];
const allLogs: string[] = [];
let shiftMs = 0;

beforeAll(async () => {
  fx = await releasesFixture();
  fx.sim.limits.values.pointsPerMinute = BUDGET;
  fx.sim.limits.values.pointsWindowMs = WINDOW_MS;
  for (const account of ACCOUNTS) fx.install(account, ["only"]);
  fx.sim.releases.add("tiny-011/only", { tagName: "v11" });
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(allLogs, [fx.app.privateKeyPem, TRIGGER_SECRET, ...fx.sim.tokens.keys()]);
});
beforeEach(() => {
  fx.sim.clearRequests();
  // Each test's broker starts with an empty window: so does the simulator's.
  fx.sim.limits.forgetSpentPoints();
  shiftMs = 0;
  fx.sim.clockOffsetMs = 0;
});
afterEach(async () => {
  for (const broker of brokers.splice(0)) {
    allLogs.push(...broker.logs);
    await broker.close();
  }
});

async function broker(): Promise<TestBroker> {
  const started = await startBroker(
    { ...fx.env, UPSTREAM_POINTS_PER_MINUTE: String(BUDGET) },
    { now: () => Date.now() + shiftMs, timing: { pointsWindowMs: WINDOW_MS } },
  );
  brokers.push(started);
  return started;
}

const mints = () => fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens")).length;
const appPoints = () => fx.sim.requests.filter((r) => r.auth.kind === "app").reduce((sum, r) => sum + (r.method === "GET" ? 1 : 5), 0);

async function completeCrawl(url: string) {
  const { status, body } = await getReleases(url);
  expect(status).toBe(200);
  expect(body).toMatchObject({ cached: false, truncated: false });
  expect(body.repos.map((r: { repo: string }) => r.repo)).toEqual(ACCOUNTS.map((account) => `${account}/only`));
  expect(body.repos.at(-1).latest).toMatchObject({ tag: "v11" });
}

describe("the crawl and the App's points budget", () => {
  it("a cold crawl needing more than a window's points is paced across windows: complete, and the platform refuses nothing", async () => {
    const b = await broker();
    const refusedBefore = fx.sim.limits.refused.points;
    await completeCrawl(b.url);
    expect(mints()).toBe(ACCOUNTS.length);
    // 61 of the App's points went out, twice what one window allows, and none was refused.
    expect(appPoints()).toBe(1 + 5 * ACCOUNTS.length);
    expect(appPoints()).toBeGreaterThan(BUDGET);
    expect(fx.sim.limits.refused.points).toBe(refusedBefore);
  });

  it("a warm crawl reuses the read-only tokens: no mint while they have more than 10 minutes left, new ones after", async () => {
    const b = await broker();
    const refusedBefore = fx.sim.limits.refused.points;
    await completeCrawl(b.url);
    expect(mints()).toBe(ACCOUNTS.length);

    fx.sim.clearRequests();
    await completeCrawl(b.url); // no LEGACY_QUOTA_KV: every call crawls
    expect(mints()).toBe(0);
    expect(appPoints()).toBe(1); // the installation listing only

    // Both clocks jump ahead together (the broker signs its App JWTs on its own clock): the
    // broker's window is empty then, and so is the simulator's.
    shiftMs = 49 * 60_000; // the tokens (an hour) have 11 minutes left
    fx.sim.clockOffsetMs = shiftMs;
    fx.sim.limits.forgetSpentPoints();
    fx.sim.clearRequests();
    await completeCrawl(b.url);
    expect(mints()).toBe(0);

    shiftMs = 51 * 60_000; // 9 minutes left: not worth handing to a crawl
    fx.sim.clockOffsetMs = shiftMs;
    fx.sim.limits.forgetSpentPoints();
    fx.sim.clearRequests();
    await completeCrawl(b.url);
    expect(mints()).toBe(ACCOUNTS.length);
    expect(fx.sim.limits.refused.points).toBe(refusedBefore);
  });

  it("a kept token the platform no longer accepts is replaced, and the answer stays complete", async () => {
    const b = await broker();
    await completeCrawl(b.url);
    // Every token of the first crawl revoked behind the broker's back.
    for (const token of [...fx.sim.tokens.keys()]) {
      const revoked = await fetch(`${fx.sim.apiBase}/installation/token`, { method: "DELETE", headers: { authorization: `token ${token}` } });
      expect([204, 401]).toContain(revoked.status);
    }
    fx.sim.limits.forgetSpentPoints(); // the revocations were the test's calls, not the broker's
    fx.sim.clearRequests();
    await completeCrawl(b.url);
    expect(mints()).toBe(ACCOUNTS.length);
    expect(b.logs.filter((line) => line.includes("kept token refused"))).toHaveLength(ACCOUNTS.length);
  });
});
