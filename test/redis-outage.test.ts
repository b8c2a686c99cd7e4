// SERVICE_JWKS_CACHE on a Redis that stops in the middle of a run and comes back: /token keeps
// answering, key-value calls give up quickly instead of hanging requests, and the broker
// reconnects by itself. Uses a redis-server of its own, never the suite's shared one.
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { ownRedis, type OwnRedis } from "./support/redis-server.js";

let fx: TokenFixture;
let redis: OwnRedis;
const brokers: TestBroker[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
  redis = await ownRedis();
  await redis.start();
});
afterAll(async () => {
  for (const b of brokers) await b.close();
  await redis.stop();
  await fx.sim.close();
  expectNoSecrets(brokers.flatMap((b) => b.logs), secrets);
});

async function broker(): Promise<TestBroker> {
  const b = await startBroker({ ...fx.env, SERVICE_JWKS_CACHE: redis.url }, { timing: { kvTimeoutMs: 300 } });
  brokers.push(b);
  return b;
}

async function exchange(b: TestBroker) {
  const oidcToken = await fx.sim.oidc.sign();
  secrets.push(oidcToken);
  const res = await postJson(`${b.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

const snapshotKeys = async () => (await redis.cli("--scan", "--pattern", "*jwks*")).split("\n").filter(Boolean);

it("keeps answering through a Redis outage and reconnects when it returns", async () => {
  const a = await broker();
  expect((await exchange(a)).status).toBe(200);
  expect(await snapshotKeys()).toHaveLength(1);

  await redis.stop();
  // Keys in memory: /token goes on answering without Redis.
  for (let i = 0; i < 3; i += 1) expect((await exchange(a)).status).toBe(200);

  // A fresh broker with the issuer down and Redis down gets its verdict (503) promptly: the
  // snapshot read gives up after the store timeout instead of hanging the request.
  fx.sim.oidc.keyEndpoint = "fail";
  const b = await broker();
  const started = Date.now();
  const refused = await exchange(b);
  expect(refused.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
  expect(Date.now() - started).toBeLessThan(5000);
  fx.sim.oidc.keyEndpoint = "ok";

  // Redis is back (empty: it keeps nothing on disk). A rotated key makes broker A fetch a new key
  // set and write its snapshot again, which it can only do once it has reconnected.
  await redis.start();
  fx.sim.oidc.rotateKey();
  let keys: string[] = [];
  for (let attempt = 0; attempt < 40 && keys.length === 0; attempt += 1) {
    expect((await exchange(a)).status).toBe(200);
    keys = await snapshotKeys();
    if (keys.length === 0) await new Promise((r) => setTimeout(r, 250));
  }
  expect(keys).toHaveLength(1);
});
