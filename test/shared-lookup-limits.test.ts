// Issue 37, item 3: n broker instances on one Redis learn "not installed" once and give an owner one
// share of installation lookups, not n. Two built brokers (real processes) against the simulator,
// sharing the suite's Redis through LEGACY_QUOTA_KV, or WEBHOOK_QUEUE's Redis when that is the one
// configured, or SERVICE_JWKS_CACHE's when only it is (server/kv/shared-store.ts); a Redis of the test's own stopped shows each instance back on its own limits.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { ownRedis, type OwnRedis } from "./support/redis-server.js";
import { deleteKeysUnder, REDIS_URL } from "./support/redis-url.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";
import { signatureFor } from "../server/webhook/verify-signature.js";

const SECRET = "shared-limits-webhook-secret-0123456789";
/** WEBHOOK_QUEUE's key prefix here (its limits under `<prefix>:limits:`), deleted afterwards. */
const QUEUE_PREFIX = `shared-limits-${randomUUID().slice(0, 8)}`;
let fx: TokenFixture;
let redis: OwnRedis;
const brokers: BrokerProcess[] = [];
const secrets: string[] = [SECRET];

beforeAll(async () => {
  fx = await tokenFixture();
  redis = await ownRedis();
  await redis.start();
});
afterAll(async () => {
  for (const broker of brokers) await broker.stop();
  await redis.stop();
  await fx.sim.close();
  await deleteKeysUnder([QUEUE_PREFIX]);
  expectNoSecrets(brokers.flatMap((b) => b.lines), [...secrets, fx.app.privateKeyPem]);
}, 30_000);

async function pair(env: Record<string, string>): Promise<[BrokerProcess, BrokerProcess]> {
  const started = await Promise.all([0, 1].map(() => spawnBroker({ ...fx.env, HOST_WEBHOOK_SECRET: SECRET, ...env }, 30_000)));
  brokers.push(...started);
  return started as [BrokerProcess, BrokerProcess];
}

async function exchange(at: BrokerProcess, repository: string, oidcToken?: string) {
  const token = oidcToken ?? (await fx.sim.oidc.sign({ repository }));
  secrets.push(token);
  const [owner, repo] = repository.split("/");
  const res = await postJson(`${at.url}/token`, { oidcToken: token, owner, repo });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

const lookupsOf = (owner: string) => fx.sim.requests.filter((r) => r.method === "GET" && r.path.startsWith(`/repos/${owner}/`) && r.path.endsWith("/installation")).length;

async function deliver(at: BrokerProcess, event: string, payload: unknown) {
  const raw = JSON.stringify(payload);
  const res = await fetch(`${at.url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": event, "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  return { status: res.status, body: (await res.json()) as unknown };
}

/** `count` repositories of `owner` the App is not on, asked for one after another at `at`: each answer's status and code. */
async function distinctRepositories(at: BrokerProcess, owner: string, from: number, count: number): Promise<string[]> {
  const answers: string[] = [];
  for (let i = from; i < from + count; i += 1) {
    const res = await exchange(at, `${owner}/repo-${i}`);
    answers.push(`${res.status} ${String(res.body.error ?? "ok")}`);
  }
  return answers;
}

describe("two instances on one Redis (LEGACY_QUOTA_KV)", () => {
  it("an owner's not-installed replays against A then B cost one lookup; an installation_repositories delivery to A makes B mint at once", async () => {
    const [a, b] = await pair({ LEGACY_QUOTA_KV: REDIS_URL });
    const repository = "drifter-org/tool";
    const account = fx.sim.repository("drifter-org", "tool");
    const oidcToken = await fx.sim.oidc.sign({ repository });
    const answers: number[] = [];
    for (const at of [a, b, a, b, b, a]) answers.push((await exchange(at, repository, oidcToken)).status);
    expect({ answers, lookups: lookupsOf("drifter-org") }).toEqual({ answers: [404, 404, 404, 404, 404, 404], lookups: 1 });

    const installationId = fx.sim.addInstallation({ appId: fx.app.id, account: "drifter-org", permissions: { contents: "write", metadata: "read" }, repositories: ["tool"] });
    // Installed, no delivery yet: both still answer the remembered "not installed", without a lookup.
    expect((await exchange(b, repository, oidcToken)).status).toBe(404);
    expect(lookupsOf("drifter-org")).toBe(1);
    const delivered = await deliver(a, "installation_repositories", { action: "added", installation: { id: installationId, account: { login: "drifter-org", id: account.ownerId } } });
    expect(delivered).toEqual({ status: 200, body: { ok: true, ignored: "installation_repositories" } });
    // B never saw the delivery: it finds the App at once all the same.
    expect((await exchange(b, repository)).status).toBe(200);
    expect(lookupsOf("drifter-org")).toBe(2);
  }, 60_000);
});

describe("two instances on SERVICE_JWKS_CACHE's Redis only", () => {
  it("it is the shared store when it is the only Redis: replays against A then B cost one lookup", async () => {
    const [a, b] = await pair({ SERVICE_JWKS_CACHE: REDIS_URL });
    const oidcToken = await fx.sim.oidc.sign({ repository: "keyset-org/tool" });
    for (const at of [a, b, a, b]) expect((await exchange(at, "keyset-org/tool", oidcToken)).status).toBe(404);
    expect(lookupsOf("keyset-org")).toBe(1);
  }, 60_000);
});

describe("two instances without a shared store (before)", () => {
  it("each learns \"not installed\" for itself: replays against A then B cost one lookup each", async () => {
    const [a, b] = await pair({});
    const oidcToken = await fx.sim.oidc.sign({ repository: "apart-org/tool" });
    for (const at of [a, b, a, b]) expect((await exchange(at, "apart-org/tool", oidcToken)).status).toBe(404);
    expect(lookupsOf("apart-org")).toBe(2);
  }, 60_000);
});

describe("two instances on WEBHOOK_QUEUE's Redis", () => {
  it("an owner's lookups that find nothing get one share across both: B refuses once A spent it", async () => {
    // A budget of 100 on both sides: a share of 10 lookups per owner and minute.
    fx.sim.limits.values.pointsPerMinute = 100;
    try {
      const [a, b] = await pair({ WEBHOOK_QUEUE: `${REDIS_URL}?prefix=${QUEUE_PREFIX}`, UPSTREAM_POINTS_PER_MINUTE: "100" });
      expect(await distinctRepositories(a, "spender-org", 0, 10)).toEqual(new Array(10).fill("404 app_not_installed"));
      const refused = await exchange(b, "spender-org/repo-10");
      expect(refused.status).toBe(503);
      expect(refused.body).toEqual({ error: "installation_lookups_limited" });
      const wait = Number(refused.headers.get("retry-after"));
      expect(wait).toBeGreaterThanOrEqual(1);
      expect(wait).toBeLessThanOrEqual(60);
      expect((await exchange(a, "spender-org/repo-11")).status).toBe(503);
      expect(lookupsOf("spender-org")).toBe(10);
      // Another owner keeps its own share; an installed repository still mints on both.
      expect((await exchange(b, "bystander-org/tool")).status).toBe(404);
      expect((await exchange(b, "octo-org/app")).status).toBe(200);
      expect((await exchange(a, "octo-org/app")).status).toBe(200);
    } finally {
      fx.sim.limits.values.pointsPerMinute = 900;
    }
  }, 60_000);
});

describe("the shared Redis stopped", () => {
  it("each instance falls back to its own not-installed answers and its own share, and answers fast", async () => {
    // The brokers keep to 100 points a minute (a share of 10); the simulator keeps GitHub's 900.
    try {
      const [a, b] = await pair({ LEGACY_QUOTA_KV: redis.url, UPSTREAM_POINTS_PER_MINUTE: "100" });
      // An installed repository's steady state (its installation cached) sends no lookup script to
      // Redis: the five cached mints only take their points in the shared window and settle them
      // (two scripts each, test/shared-points.test.ts), the settle after the answer. First, while
      // its owner is the only one with points in the window: beside another owner's, one owner's
      // mints are spread over the window (docs/security.md#fair-shares-of-the-apps-budget), here
      // one every 6 s, and these five took 30 s.
      expect((await exchange(a, "octo-org/app")).status).toBe(200);
      await redis.cli("config", "resetstat");
      for (let i = 0; i < 5; i += 1) expect((await exchange(a, "octo-org/app")).status).toBe(200);
      let evals = "";
      for (let i = 0; i < 50 && !evals.includes("cmdstat_eval:calls=10,"); i += 1) {
        evals = String(await redis.cli("info", "commandstats"));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(evals).toContain("cmdstat_eval:calls=10,");

      // Both connected (a shared answer learnt), then Redis goes.
      const oidcToken = await fx.sim.oidc.sign({ repository: "outage-org/tool" });
      expect((await exchange(a, "outage-org/tool", oidcToken)).status).toBe(404);
      expect((await exchange(b, "outage-org/tool", oidcToken)).status).toBe(404);
      expect(lookupsOf("outage-org")).toBe(1);
      await redis.stop();

      const started = Date.now();
      const fromA = await distinctRepositories(a, "lonely-org", 0, 11);
      const fromB = await distinctRepositories(b, "lonely-org", 11, 11);
      const elapsed = Date.now() - started;
      // Each its own share of 10 (20 lookups in all), past it 503.
      const expected = [...new Array(10).fill("404 app_not_installed"), "503 installation_lookups_limited"];
      expect({ fromA, fromB, lookups: lookupsOf("lonely-org") }).toEqual({ fromA: expected, fromB: expected, lookups: 20 });
      // 22 requests, each with Redis calls given up at once (or within the store's bound of 500 ms).
      expect(elapsed).toBeLessThan(22 * 1000);
      // A replay each instance had learnt in process is still answered without a lookup.
      expect((await exchange(a, "outage-org/tool", oidcToken)).status).toBe(404);
      expect(lookupsOf("outage-org")).toBe(1);
    } finally {
      await redis.start(); // its stop() waits for an exit only once: afterAll stops this one
    }
  }, 90_000);
});
