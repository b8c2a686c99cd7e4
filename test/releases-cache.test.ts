// The /releases aggregate cache (LEGACY_QUOTA_KV) and the shared crawl, over HTTP: hits keep their
// generated_at, expiry, no binding, a Redis outage, two broker processes on one Redis, and
// concurrent cold requests sharing one crawl.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { getReleases, names, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";
import { REDIS_URL } from "./support/redis-url.js";

const REDIS = REDIS_URL;

let fx: ReleasesFixture;
let clock: number;
let twoOrg: number;
const brokers: TestBroker[] = [];
const allLogs: string[] = [];

beforeAll(async () => {
  fx = await releasesFixture();
  fx.install("one-org", names("repo", 12));
  twoOrg = fx.install("two-org", names("repo", 3));
  fx.sim.releases.add("one-org/repo-000", { tagName: "v1" });
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(allLogs, [fx.app.privateKeyPem, TRIGGER_SECRET, ...fx.sim.tokens.keys()]);
});
beforeEach(() => {
  fx.sim.clearRequests();
  fx.sim.faults.clear();
  clock = Date.parse("2026-06-01T12:00:00.000Z") + Math.floor(Math.random() * 1e9);
});

/**
 * Moves the broker's clock (for a broker started `withClock`), and the platform's with it: the
 * broker signs its App JWTs on its own clock, which the platform must agree with.
 */
function tick(ms: number) {
  clock += ms;
  fx.sim.clockOffsetMs = clock - Date.now();
}
afterEach(async () => {
  fx.sim.clockOffsetMs = 0;
  for (const broker of brokers.splice(0)) {
    allLogs.push(...broker.logs);
    await broker.close();
  }
});

async function broker(env: Record<string, string | undefined> = {}, withClock = false): Promise<TestBroker> {
  if (withClock) tick(0);
  const started = await startBroker({ ...fx.env, ...env }, withClock ? { now: () => clock } : {});
  brokers.push(started);
  return started;
}

const installationListings = () => fx.sim.requests.filter((r) => r.method === "GET" && r.path === "/app/installations");
const mints = () => fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens"));

describe("aggregate cache in LEGACY_QUOTA_KV", () => {
  it("serves a hit with cached: true and the original generated_at, without reaching the platform", async () => {
    const b = await broker({ LEGACY_QUOTA_KV: "memory://" });
    const first = await getReleases(b.url);
    expect(first.status).toBe(200);
    expect(first.body.cached).toBe(false);
    const upstream = fx.sim.requests.length;
    fx.sim.releases.add("two-org/repo-001", { tagName: "too-new" }); // not seen until the cache expires
    const second = await getReleases(b.url);
    expect(second.status).toBe(200);
    expect(second.body.cached).toBe(true);
    expect(second.body.generated_at).toBe(first.body.generated_at);
    expect(second.body.repos).toEqual(first.body.repos);
    expect(second.body.truncated).toBe(first.body.truncated);
    expect(Object.keys(second.body).sort()).toEqual(["cached", "generated_at", "repos", "truncated"]);
    expect(fx.sim.requests).toHaveLength(upstream);
  });

  it("expires after RELEASES_CACHE_TTL_SECONDS: the next call crawls again", async () => {
    const b = await broker({ LEGACY_QUOTA_KV: "memory://", RELEASES_CACHE_TTL_SECONDS: "1" }, true);
    const first = await getReleases(b.url);
    expect(first.body.generated_at).toBe(new Date(clock).toISOString());
    tick(999);
    expect((await getReleases(b.url)).body).toMatchObject({ cached: true, generated_at: first.body.generated_at });
    tick(1);
    const third = await getReleases(b.url);
    expect(third.body.cached).toBe(false);
    expect(third.body.generated_at).toBe(new Date(clock).toISOString());
    expect(installationListings()).toHaveLength(2);
  });

  it("applies a lowered TTL to an entry already stored", async () => {
    const b = await broker({ LEGACY_QUOTA_KV: "memory://" }, true);
    await getReleases(b.url);
    tick(10_000);
    expect((await getReleases(b.url)).body.cached).toBe(true);
    b.env.RELEASES_CACHE_TTL_SECONDS = "5";
    expect((await getReleases(b.url)).body.cached).toBe(false);
  });

  it("keeps an aggregate missing a failed installation for 60 s at most", async () => {
    const b = await broker({ LEGACY_QUOTA_KV: "memory://" }, true);
    const failing = fx.sim.faults.add({ method: "POST", path: `/app/installations/${twoOrg}/access_tokens`, respond: { status: 500, body: { message: "Server Error" } } });
    const partial = await getReleases(b.url);
    expect(partial.body.truncated).toBe(true);
    expect(partial.body.repos).toHaveLength(12);
    failing.remove();
    tick(59_000);
    expect((await getReleases(b.url)).body).toMatchObject({ cached: true, truncated: true });
    tick(1_000);
    const healed = await getReleases(b.url);
    expect(healed.body).toMatchObject({ cached: false, truncated: false });
    expect(healed.body.repos).toHaveLength(15);
  });

  it("keeps aggregates for different caps apart", async () => {
    const b = await broker({ LEGACY_QUOTA_KV: "memory://" });
    expect((await getReleases(b.url)).body.repos).toHaveLength(15);
    b.env.RELEASES_MAX_REPOSITORIES = "5";
    const capped = await getReleases(b.url);
    expect(capped.body).toMatchObject({ cached: false, truncated: true });
    expect(capped.body.repos).toHaveLength(5);
    b.env.RELEASES_MAX_REPOSITORIES = "";
    expect((await getReleases(b.url)).body).toMatchObject({ cached: true, truncated: false });
  });

  it("without the binding, every call crawls and says cached: false", async () => {
    const b = await broker();
    const first = await getReleases(b.url);
    const second = await getReleases(b.url);
    expect([first.body.cached, second.body.cached]).toEqual([false, false]);
    expect(installationListings()).toHaveLength(2);
    // The second crawl reuses the first one's read-only tokens (crawl-token-cache.ts): no mint.
    expect(mints()).toHaveLength(2);
  });

  it("degrades to crawling when Redis is unreachable, never to an error", async () => {
    const b = await broker({ LEGACY_QUOTA_KV: "redis://127.0.0.1:1" });
    for (let i = 0; i < 2; i += 1) {
      const res = await getReleases(b.url);
      expect(res.status).toBe(200);
      expect(res.body.cached).toBe(false);
      expect(res.body.repos).toHaveLength(15);
    }
    expect(installationListings()).toHaveLength(2);
    // Logged by whichever of the URL's users failed first: the store, its lease lock or the
    // connection (after one failure the breaker skips the others: server/kv/store-breaker.ts).
    expect(b.logs.some((line) => /key-value store unavailable|lease lock unavailable|Redis unavailable/.test(line))).toBe(true);
  });

  it("ignores an unusable store URL (logged) and still answers", async () => {
    const b = await broker({ LEGACY_QUOTA_KV: "ftp://nowhere" });
    const res = await getReleases(b.url);
    expect(res.status).toBe(200);
    expect(res.body.cached).toBe(false);
    expect(b.logs.some((line) => line.includes("binding ignored"))).toBe(true);
  });
});

describe("the shared crawl", () => {
  it.each([
    ["with the binding", { LEGACY_QUOTA_KV: "memory://" }],
    ["without the binding", {}],
  ])("concurrent cold requests share one crawl (%s)", async (_name, env) => {
    const b = await broker(env);
    fx.sim.latencyMs = 20; // keeps the crawl in flight while the others arrive
    try {
      const answers = await Promise.all(Array.from({ length: 6 }, () => getReleases(b.url)));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(new Set(answers.map((a) => a.body.generated_at)).size).toBe(1);
      expect(answers.every((a) => a.body.cached === false && a.body.repos.length === 15)).toBe(true);
      expect(installationListings()).toHaveLength(1);
      expect(mints()).toHaveLength(2);
      expect(fx.sim.requests.filter((r) => r.path === "/graphql")).toHaveLength(2);
    } finally {
      fx.sim.latencyMs = 0;
    }
  });

  it("a failed crawl fails every request that shared it, and the next request crawls afresh", async () => {
    const b = await broker({ LEGACY_QUOTA_KV: "memory://" });
    const outage = fx.sim.faults.add({ method: "GET", path: "/app/installations", respond: { status: 503, body: { message: "Unavailable" } } });
    const failed = await Promise.all([getReleases(b.url), getReleases(b.url)]);
    expect(failed.map((f) => [f.status, f.body])).toEqual([
      [500, { error: "internal_error" }],
      [500, { error: "internal_error" }],
    ]);
    expect(installationListings()).toHaveLength(3); // one crawl, its three attempts
    outage.remove();
    const recovered = await getReleases(b.url);
    expect(recovered.body).toMatchObject({ cached: false, truncated: false });
  });
});

describe("two broker processes on one Redis", () => {
  const processes: BrokerProcess[] = [];
  afterAll(async () => {
    for (const p of processes) {
      allLogs.push(...p.lines);
      await p.stop();
    }
  });

  it("the second process serves the first one's aggregate from Redis", async () => {
    // The App id is random per run, so this key is this test's alone on the shared Redis.
    const env = { ...fx.env, LEGACY_QUOTA_KV: REDIS, RELEASES_CACHE_TTL_SECONDS: "30" };
    const first = await spawnBroker(env);
    processes.push(first);
    const second = await spawnBroker(env);
    processes.push(second);
    const fresh = await getReleases(first.url);
    expect(fresh.status).toBe(200);
    expect(fresh.body.cached).toBe(false);
    const upstream = fx.sim.requests.length;
    const shared = await getReleases(second.url);
    expect(shared.status).toBe(200);
    expect(shared.body).toEqual({ ...fresh.body, cached: true });
    expect(fx.sim.requests).toHaveLength(upstream);
  });
});
