// One crawl for the fleet: two real broker processes (the built broker, `spawnBroker`) on the real
// Redis, each test with an App of its own (a random id) so its aggregate and lock keys are its alone;
// one simulator for the file.
// Concurrent cold GET /releases on both → the simulator sees one crawl's requests; a holder killed
// mid-crawl (SIGKILL) → its lease runs out and a waiting instance crawls instead.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { randomInt } from "node:crypto";
import { expectNoSecrets } from "./support/fixtures.js";
import { getReleases, names, READ_WRITE, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";
import { REDIS_URL } from "./support/redis-url.js";

const REDIS = REDIS_URL;

/** The simulator (with its fixture's settings), and this test's App. */
let fx: Pick<ReleasesFixture, "sim" | "env">;
const processes: BrokerProcess[] = [];
const allLogs: string[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  const { sim, env } = await releasesFixture();
  fx = { sim, env };
  for (const name of names("repo", 150)) sim.repository("north-org", name);
  sim.releases.add("north-org/repo-149", { tagName: "v9" });
});
beforeEach(() => {
  // A fresh App (random id) per test: fresh keys in the shared Redis, nothing cached.
  const app = fx.sim.createApp({ id: randomInt(2_000_000, 900_000_000) });
  secrets.push(app.privateKeyPem);
  fx.env = { ...fx.env, HOST_APP_ID: String(app.id), HOST_APP_PRIVATE_KEY: app.privateKeyPem };
  // On every repository of north-org: its listing is walked (two pages); on 30 selected ones of south-org.
  fx.sim.addInstallation({ appId: app.id, account: "north-org", permissions: { ...READ_WRITE }, repositories: "all" });
  fx.sim.addInstallation({ appId: app.id, account: "south-org", permissions: { ...READ_WRITE }, repositories: names("repo", 30) });
  fx.sim.clearRequests();
  fx.sim.faults.clear();
  fx.sim.latencyMs = 0;
});
afterEach(async () => {
  for (const p of processes.splice(0)) {
    await p.stop("SIGKILL");
    allLogs.push(...p.lines);
  }
});
afterAll(async () => {
  secrets.push(...fx.sim.tokens.keys());
  await fx.sim.close();
  expectNoSecrets(allLogs, [TRIGGER_SECRET, ...secrets]);
});

async function fleet(count: number, env: Record<string, string> = {}): Promise<BrokerProcess[]> {
  const started = await Promise.all(
    Array.from({ length: count }, () => spawnBroker({ ...fx.env, LEGACY_QUOTA_KV: REDIS, RELEASES_CACHE_TTL_SECONDS: "60", ...env })),
  );
  processes.push(...started);
  return started;
}

const count = (method: string, pattern: RegExp) => fx.sim.requests.filter((r) => r.method === method && pattern.test(r.path)).length;
const installationListings = () => count("GET", /^\/app\/installations$/);
const logged = (p: BrokerProcess, message: string) => p.lines.some((line) => line.includes(message));

async function until(condition: () => boolean, what: string, limitMs = 15_000): Promise<void> {
  const giveUp = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > giveUp) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("one crawl for the fleet (LEGACY_QUOTA_KV on Redis)", () => {
  it("concurrent cold requests on two instances run exactly one crawl and answer the same aggregate", async () => {
    const [a, b] = await fleet(2);
    fx.sim.latencyMs = 40; // keeps the crawl in flight while the other instance's requests arrive
    const answers = await Promise.all([a!, b!, a!, b!, a!, b!].map((p) => getReleases(p.url)));
    expect(answers.map((x) => x.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // One crawl's requests: one listing, two mints, two listing pages (north-org) + one count
    // (south-org: its mint answer lists its repositories), two GraphQL queries + one.
    expect(installationListings()).toBe(1);
    expect(count("POST", /^\/app\/installations\/\d+\/access_tokens$/)).toBe(2);
    expect(count("GET", /^\/installation\/repositories$/)).toBe(3);
    expect(count("POST", /^\/graphql$/)).toBe(3);
    expect(fx.sim.requests).toHaveLength(1 + 2 + 3 + 3);
    // The same aggregate everywhere: the holder's answer (cached: false), the rest read it back.
    const first = answers[0]!.body;
    expect(first.repos).toHaveLength(180);
    for (const x of answers) {
      expect({ ...x.body, cached: undefined }).toEqual({ ...first, cached: undefined });
    }
    expect(answers.filter((x) => x.body.cached === false).length).toBeGreaterThanOrEqual(1);
    // Exactly one instance crawled; the other waited for it.
    const crawled = [a!, b!].filter((p) => logged(p, "releases crawl finished"));
    expect(crawled).toHaveLength(1);
    expect(logged(crawled[0] === a ? b! : a!, "another instance is crawling; waiting for its aggregate")).toBe(true);
  });

  it("a holder whose crawl fails answers 500; the instance waiting for it then crawls and answers", async () => {
    const [a, b] = await fleet(2);
    fx.sim.latencyMs = 100;
    // Every attempt of the first crawl's installation listing fails (the broker tries 3 times).
    fx.sim.faults.add({ method: "GET", path: "/app/installations", times: 3, respond: { status: 503, body: { message: "Unavailable" } } });
    const failing = getReleases(a!.url);
    await until(() => installationListings() === 1, "the first instance's crawl to start");
    const waiting = getReleases(b!.url);
    const [first, second] = await Promise.all([failing, waiting]);
    expect([first.status, first.body]).toEqual([500, { error: "internal_error" }]);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ cached: false, truncated: false });
    expect(second.body.repos).toHaveLength(180);
    expect(installationListings()).toBe(4); // three failed attempts, then the waiter's crawl
    expect(logged(b!, "another instance is crawling; waiting for its aggregate")).toBe(true);
    expect(logged(b!, "lease free without an aggregate; crawling here")).toBe(true);
  });

  it("a holder killed mid-crawl: its lease runs out and a waiting instance crawls and answers", async () => {
    const [a, b] = await fleet(2, { RELEASES_CRAWL_LEASE_SECONDS: "1" });
    fx.sim.latencyMs = 300; // a crawl of several sequential steps takes well over the lease
    const doomed = getReleases(a!.url).catch(() => "killed");
    await until(() => installationListings() === 1, "the first instance's crawl to start");
    await a!.stop("SIGKILL");
    expect(await doomed).toBe("killed");
    fx.sim.latencyMs = 20;
    const answer = await getReleases(b!.url);
    expect(answer.status).toBe(200);
    expect(answer.body.cached).toBe(false);
    expect(answer.body.truncated).toBe(false);
    expect(answer.body.repos).toHaveLength(180);
    expect(installationListings()).toBe(2); // the dead holder's and the waiter's
    expect(logged(b!, "another instance is crawling; waiting for its aggregate")).toBe(true);
    expect(logged(b!, "lease free without an aggregate; crawling here")).toBe(true);
    // The aggregate is stored for the fleet: a later request anywhere is a hit.
    const [c] = await fleet(1);
    expect((await getReleases(c!.url)).body).toMatchObject({ cached: true, generated_at: answer.body.generated_at });
  });
});
