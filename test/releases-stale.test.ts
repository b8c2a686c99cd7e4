// Stale-while-revalidate on GET /releases (issue 28 item 5), over HTTP against the simulator: past
// its TTL the last aggregate is answered at once while the platform's rate limit is in force
// (`cached: true`, `stale: true`, `age_seconds`), and a refresh later replaces it; with nothing
// stored, a rate limit is 503 platform_rate_limited with the platform's wait as Retry-After, and
// the requests after it are answered from what the broker knows without reaching the platform; a
// slow or failing refresh never costs the stale answer; two instances on one Redis refresh once.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { getReleases, names, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";
import { REDIS_URL } from "./support/redis-url.js";

let fx: ReleasesFixture;
let clock: number;
const brokers: TestBroker[] = [];
const processes: BrokerProcess[] = [];
const allLogs: string[] = [];

beforeAll(async () => {
  fx = await releasesFixture();
  fx.install("east-org", names("repo", 4));
  fx.install("west-org", names("repo", 2));
  fx.sim.releases.add("east-org/repo-000", { tagName: "v1" });
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(allLogs, [fx.app.privateKeyPem, TRIGGER_SECRET, ...fx.sim.tokens.keys()]);
});
beforeEach(() => {
  fx.sim.clearRequests();
  fx.sim.faults.clear();
  fx.sim.latencyMs = 0;
  clock = Date.parse("2026-06-01T12:00:00.000Z") + Math.floor(Math.random() * 1e9);
  tick(0);
});
afterEach(async () => {
  fx.sim.faults.clear();
  fx.sim.latencyMs = 0;
  fx.sim.clockOffsetMs = 0;
  for (const broker of brokers.splice(0)) {
    allLogs.push(...broker.logs);
    await broker.close();
  }
  for (const p of processes.splice(0)) {
    await p.stop("SIGKILL");
    allLogs.push(...p.lines);
  }
});

/** Moves the broker's clock and the platform's with it (the broker signs its App JWTs on its clock). */
function tick(ms: number) {
  clock += ms;
  fx.sim.clockOffsetMs = clock - Date.now();
}

async function broker(env: Record<string, string | undefined> = {}, graceMs?: number): Promise<TestBroker> {
  const started = await startBroker(
    { ...fx.env, LEGACY_QUOTA_KV: "memory://", RELEASES_CACHE_TTL_SECONDS: "60", ...env },
    { now: () => clock, ...(graceMs === undefined ? {} : { timing: { releasesStaleGraceMs: graceMs } }) },
  );
  brokers.push(started);
  return started;
}

const listings = () => fx.sim.requests.filter((r) => r.method === "GET" && r.path === "/app/installations").length;

/** GitHub's primary rate limit on the App's installation listing, resetting `seconds` from now (the broker's clock). */
function primaryLimit(seconds: number) {
  const reset = Math.ceil(clock / 1000) + seconds;
  const fault = fx.sim.faults.add({
    method: "GET",
    path: "/app/installations",
    respond: {
      status: 403,
      headers: { "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-used": "5000", "x-ratelimit-reset": String(reset), "x-ratelimit-resource": "core" },
      body: { message: "API rate limit exceeded for app ID 1.", documentation_url: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api" },
    },
  });
  return { fault, reset };
}

/** GitHub's secondary rate limit (its message and `retry-after`) on the App's installation listing. */
function secondaryLimit(retryAfterSeconds: number) {
  return fx.sim.faults.add({
    method: "GET",
    path: "/app/installations",
    respond: {
      status: 403,
      headers: { "retry-after": String(retryAfterSeconds) },
      body: { message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", documentation_url: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits" },
    },
  });
}

/** GET /releases until its answer passes `test` (a stale answer meanwhile joins the refresh running, starting none). */
async function untilAnswer(url: string, test: (body: any) => boolean, limitMs = 30_000): Promise<any> {
  const giveUp = Date.now() + limitMs;
  for (;;) {
    const { status, body } = await getReleases(url);
    expect(status).toBe(200);
    if (test(body)) return body;
    if (Date.now() > giveUp) throw new Error("gave up waiting for the refresh");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const logged = (lines: string[], message: string) => lines.filter((line) => line.includes(message)).length;

describe("a stale aggregate while the platform's budget is spent", () => {
  it("answers the last aggregate at once with stale: true and its age, and a refresh after the reset replaces it", async () => {
    const b = await broker();
    const first = await getReleases(b.url);
    expect(first.body).toMatchObject({ cached: false, truncated: false });
    expect(Object.keys(first.body).sort()).toEqual(["cached", "generated_at", "repos", "truncated"]);

    tick(90_000); // past the 60 s TTL
    const { reset } = primaryLimit(600);
    const stale = await getReleases(b.url);
    expect(stale.status).toBe(200);
    expect(stale.body).toEqual({ ...first.body, cached: true, stale: true, age_seconds: 90 });
    expect(stale.headers.get("cache-control")).toBe("no-store");
    expect(listings()).toBe(2); // the refresh tried once and met the limit

    // The broker now knows the platform's wait: the next answers reach the platform not at all.
    tick(5_500);
    const again = await getReleases(b.url);
    expect(again.body).toMatchObject({ cached: true, stale: true, age_seconds: 95, generated_at: first.body.generated_at });
    expect(listings()).toBe(2);

    // After the reset (the limit lifted), the next request refreshes: fresh, no `stale`.
    fx.sim.faults.clear();
    fx.sim.releases.add("west-org/repo-001", { tagName: "v2" });
    tick(reset * 1000 - clock + 1_000);
    const fresh = await getReleases(b.url);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ cached: false, generated_at: new Date(clock).toISOString() });
    expect(Object.keys(fresh.body).sort()).toEqual(["cached", "generated_at", "repos", "truncated"]);
    expect(fresh.body.repos.find((r: { repo: string }) => r.repo === "west-org/repo-001").latest).toMatchObject({ tag: "v2" });
    expect((await getReleases(b.url)).body).toMatchObject({ cached: true, generated_at: fresh.body.generated_at });
    expect((await getReleases(b.url)).body.stale).toBeUndefined();
  });

  it("a secondary limit (retry-after) is served stale the same way", async () => {
    const b = await broker();
    const first = await getReleases(b.url);
    tick(61_000);
    secondaryLimit(120);
    expect((await getReleases(b.url)).body).toEqual({ ...first.body, cached: true, stale: true, age_seconds: 61 });
    const seen = fx.sim.requests.length;
    expect((await getReleases(b.url)).body).toMatchObject({ stale: true, age_seconds: 61 });
    expect(fx.sim.requests).toHaveLength(seen);
  });

  it("a refresh that fails otherwise (an outage, every installation or every lookup failing) keeps the stale entry", async () => {
    const b = await broker();
    const first = await getReleases(b.url);
    tick(61_000);
    const outage = fx.sim.faults.add({ method: "GET", path: "/app/installations", respond: { status: 502, body: { message: "Server Error" } } });
    expect((await getReleases(b.url)).body).toEqual({ ...first.body, cached: true, stale: true, age_seconds: 61 });
    outage.remove();
    // Listing answered, every installation's repositories refused (the crawl reuses its kept
    // tokens, so it lists them): the crawl learnt nothing and stores nothing.
    fx.sim.faults.add({ method: "GET", path: "/installation/repositories", respond: { status: 500, body: { message: "Server Error" } } });
    expect((await getReleases(b.url)).body).toEqual({ ...first.body, cached: true, stale: true, age_seconds: 61 });
    fx.sim.faults.clear();
    // Every release lookup failing (GraphQL down) would report every repository without a release.
    fx.sim.faults.add({ method: "POST", path: "/graphql", respond: { status: 502, body: { message: "Server Error" } } });
    expect((await getReleases(b.url)).body).toEqual({ ...first.body, cached: true, stale: true, age_seconds: 61 });
    fx.sim.faults.clear();
    const fresh = await getReleases(b.url);
    expect(fresh.body).toMatchObject({ cached: false, truncated: false, repos: first.body.repos });
    expect(logged(b.logs, "every installation or every release lookup failed; the last aggregate stays")).toBe(2);
  });

  it("a refresh slower than the grace: the stale answer goes out and the one refresh goes on (joined, not repeated)", async () => {
    const b = await broker({}, 200);
    const first = await getReleases(b.url);
    tick(61_000);
    fx.sim.latencyMs = 1_500; // every platform answer: the refresh takes several of them
    const [one, two] = await Promise.all([getReleases(b.url), getReleases(b.url)]);
    for (const answer of [one, two]) expect(answer.body).toEqual({ ...first.body, cached: true, stale: true, age_seconds: 61 });
    expect((await getReleases(b.url)).body).toMatchObject({ stale: true });
    // The background refresh ends and stores its aggregate (requests meanwhile join it): then the
    // answer is fresh from the cache.
    fx.sim.latencyMs = 0;
    const after = await untilAnswer(b.url, (body) => body.stale === undefined);
    expect(after.generated_at).toBe(new Date(clock).toISOString()); // `cached` false if the request joined the refresh's end
    expect(logged(b.logs, "releases crawl finished")).toBe(2);
    expect(listings()).toBe(2); // the first crawl and one refresh for every stale answer
  });

  it("past RELEASES_STALE_SECONDS the last aggregate is not served: a crawl, or 503 if the budget is spent", async () => {
    const b = await broker({ RELEASES_STALE_SECONDS: "30" });
    await getReleases(b.url);
    tick(60_000 + 29_000);
    primaryLimit(600);
    expect((await getReleases(b.url)).body).toMatchObject({ stale: true, age_seconds: 89 });
    tick(1_000);
    const gone = await getReleases(b.url);
    expect(gone.status).toBe(503);
    expect(gone.body).toEqual({ error: "platform_rate_limited" });
  });
});

describe("nothing stored and the budget spent", () => {
  for (const store of ["memory://", undefined]) {
    it(`503 platform_rate_limited with the platform's wait as Retry-After, then at once without reaching it (LEGACY_QUOTA_KV ${store ?? "unset"})`, async () => {
      const b = await broker({ LEGACY_QUOTA_KV: store });
      const { reset } = primaryLimit(600);
      const first = await getReleases(b.url);
      expect(first.status).toBe(503);
      expect(first.body).toEqual({ error: "platform_rate_limited" });
      expect(Number(first.headers.get("retry-after"))).toBe(Math.ceil(reset - clock / 1000));
      expect(listings()).toBe(1); // the platform's 403 is not retried before its reset

      tick(100_000);
      const second = await getReleases(b.url);
      expect(second.status).toBe(503);
      expect(second.body).toEqual({ error: "platform_rate_limited" });
      expect(Number(second.headers.get("retry-after"))).toBe(Math.ceil(reset - clock / 1000));
      expect(fx.sim.requests.filter((r) => r.path === "/app/installations")).toHaveLength(1); // decided here, not after a deadline

      fx.sim.faults.clear();
      tick(reset * 1000 - clock);
      expect((await getReleases(b.url)).body).toMatchObject({ cached: false, truncated: false });
    });
  }

  it("a secondary limit's retry-after is the Retry-After", async () => {
    const b = await broker();
    secondaryLimit(45);
    const answer = await getReleases(b.url);
    expect(answer.status).toBe(503);
    expect(answer.headers.get("retry-after")).toBe("45");
    tick(15_000);
    const next = await getReleases(b.url);
    expect(next.status).toBe(503);
    expect(next.headers.get("retry-after")).toBe("30");
    expect(listings()).toBe(1);
  });
});

describe("two instances on one Redis", () => {
  it("both answer the stale aggregate while one refresh runs for both", async () => {
    fx.sim.clockOffsetMs = 0; // real processes, real clock
    const env = { ...fx.env, LEGACY_QUOTA_KV: REDIS_URL, RELEASES_CACHE_TTL_SECONDS: "3" };
    const [a, b] = await Promise.all([spawnBroker(env), spawnBroker(env)]);
    processes.push(a!, b!);
    const first = await getReleases(a!.url);
    expect(first.body.cached).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 3_100)); // past the 3 s TTL
    fx.sim.latencyMs = 1_500; // the refresh outlasts the 3 s grace
    const answers = await Promise.all([getReleases(a!.url), getReleases(b!.url), getReleases(b!.url)]);
    for (const answer of answers) {
      expect(answer.body).toMatchObject({ cached: true, stale: true, generated_at: first.body.generated_at, repos: first.body.repos });
      expect(answer.body.age_seconds).toBeGreaterThanOrEqual(3);
    }
    fx.sim.latencyMs = 0;
    const fromA = await untilAnswer(a!.url, (body) => body.stale === undefined);
    const fromB = await untilAnswer(b!.url, (body) => body.stale === undefined);
    expect(fromB.generated_at).toBe(fromA.generated_at);
    expect(fromA.generated_at).not.toBe(first.body.generated_at);
    expect(logged([...a!.lines, ...b!.lines], "releases crawl finished")).toBe(2);
    expect(listings()).toBe(2); // the first crawl and one refresh, fleet-wide
  });
});
