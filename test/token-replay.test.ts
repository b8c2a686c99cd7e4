// Issue 37 item 4: one OIDC token mints once. Its `jti` is claimed once the token is verified, for
// as long as the token could verify; a replay is 409 oidc_token_replayed, on this instance or, with
// a shared store configured (the one the shared limits use: LEGACY_QUOTA_KV, else WEBHOOK_QUEUE,
// else SERVICE_JWKS_CACHE), on any instance sharing it. The simulator records every mint asked for.
import { afterAll, describe, expect, it } from "@jest/globals";
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { ERROR_CODES } from "../shared/error-codes.js";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { deleteKeysUnder, REDIS_URL } from "./support/redis-url.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

/** WEBHOOK_QUEUE's key prefix in the two-process case (its claims under `<prefix>:oidc-jti:`), deleted afterwards. */
const QUEUE_PREFIX = `token-replay-${randomUUID().slice(0, 8)}`;

const secrets: string[] = [];
const t = brokerPerTest({ secrets });
const MINT = /^\/app\/installations\/\d+\/access_tokens$/;
const mints = () => t.fx.sim.requests.filter((r) => r.method === "POST" && MINT.test(r.path)).length;

async function signed(claims?: Record<string, unknown>): Promise<string> {
  const token = await t.fx.sim.oidc.sign(claims);
  secrets.push(token);
  return token;
}
async function post(url: string, oidcToken: string, extra: Record<string, unknown> = {}) {
  const res = await postJson(`${url}/token`, { oidcToken, owner: "octo-org", repo: "app", ...extra });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

afterAll(async () => {
  await deleteKeysUnder(["tokensmith-oidc-jti", QUEUE_PREFIX]);
});

describe("one OIDC token mints once", () => {
  it("the same token twice: 200, then 409 oidc_token_replayed with nothing minted", async () => {
    const token = await signed();
    expect((await post(t.broker.url, token)).status).toBe(200);
    const replay = await post(t.broker.url, token);
    expect(replay.status).toBe(ERROR_CODES.oidc_token_replayed.status);
    expect(replay.status).toBe(409);
    expect(replay.body).toEqual({ error: "oidc_token_replayed" });
    expect(mints()).toBe(1);
    // Another token of the same job is a new token: it mints.
    expect((await post(t.broker.url, await signed())).status).toBe(200);
    expect(mints()).toBe(2);
  });

  it("32 concurrent posts of one token: exactly one mint, 31 replays", async () => {
    const token = await signed();
    const answers = await Promise.all(Array.from({ length: 32 }, () => post(t.broker.url, token)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409 && a.body.error === "oidc_token_replayed")).toHaveLength(31);
    expect(mints()).toBe(1);
  });

  it("a token that fails verification claims nothing: the same jti, properly signed, then mints", async () => {
    const jti = randomUUID();
    const good = await signed({ jti });
    const [header, payload] = good.split(".");
    const forged = `${header}.${payload}.${"A".repeat(342)}`;
    expect((await post(t.broker.url, forged)).body).toEqual({ error: "invalid_oidc_token", reason: "signature_invalid" });
    expect((await post(t.broker.url, good)).status).toBe(200);
  });

  it("refused before the mint was sent (403 permissions_not_granted): the claim is handed back, so the same token can still mint", async () => {
    const token = await signed();
    const refused = await post(t.broker.url, token, { permissions: { administration: "write" } });
    expect([refused.status, refused.body.error]).toEqual([403, "permissions_not_granted"]);
    expect(mints()).toBe(0);
    expect((await post(t.broker.url, token, { permissions: { contents: "read" } })).status).toBe(200);
    expect(mints()).toBe(1);
    expect((await post(t.broker.url, token)).status).toBe(409);
  });

  it("a mint that was sent and failed (502) keeps the claim: the same token is 409, a fresh one mints", async () => {
    // A 400 is never retried: exactly one mint sent, refused.
    t.fx.sim.faults.add({ method: "POST", path: MINT, times: 1, respond: { status: 400, body: { message: "Bad Request" } } });
    const token = await signed();
    expect((await post(t.broker.url, token)).body).toEqual({ error: "installation_token_failed" });
    expect(mints()).toBe(1);
    expect((await post(t.broker.url, token)).status).toBe(409);
    expect(mints()).toBe(1);
    expect((await post(t.broker.url, await signed())).status).toBe(200);
  });

  it("a token without jti is claimed by its digest: twice → 200 then 409", async () => {
    const token = await signed({ jti: undefined });
    expect(JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString())).not.toHaveProperty("jti");
    expect((await post(t.broker.url, token)).status).toBe(200);
    expect((await post(t.broker.url, token)).status).toBe(409);
    expect(mints()).toBe(1);
  });
});

describe("across instances sharing one Redis (SERVICE_JWKS_CACHE)", () => {
  const brokers: TestBroker[] = [];
  afterAll(async () => {
    for (const broker of brokers) {
      t.logs.push(...broker.logs);
      await broker.close();
    }
  });

  it("one token sent to two brokers, 16 posts each at once: one mint in all", async () => {
    for (let i = 0; i < 2; i += 1) brokers.push(await startBroker({ ...t.fx.env, SERVICE_JWKS_CACHE: REDIS_URL }));
    // Each broker's first claim opens its Redis connection; one that does not answer within the
    // store's bound (500 ms, a loaded CI machine) is claimed in process only (docs/security.md).
    // A job of each first, so the race below is between two connected instances.
    for (const broker of brokers) expect((await post(broker.url, await signed())).status).toBe(200);
    const before = mints();
    const token = await signed();
    const answers = await Promise.all(brokers.flatMap((broker) => Array.from({ length: 16 }, () => post(broker.url, token))));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(31);
    expect(mints() - before).toBe(1);
    // And a token first used on one instance is refused on the other.
    const next = await signed();
    expect((await post(brokers[0]!.url, next)).status).toBe(200);
    expect((await post(brokers[1]!.url, next)).status).toBe(409);
    expect(mints() - before).toBe(2);
  });
});

describe("two broker processes sharing only WEBHOOK_QUEUE's Redis", () => {
  const processes: BrokerProcess[] = [];
  afterAll(async () => {
    for (const broker of processes) {
      await broker.stop();
      t.logs.push(...broker.lines);
    }
  }, 30_000);

  it("a token used on one is 409 oidc_token_replayed on the other; the claim is under the queue's prefix", async () => {
    // No LEGACY_QUOTA_KV, no SERVICE_JWKS_CACHE: WEBHOOK_QUEUE is the shared store, as for the shared limits.
    const env = { ...t.fx.env, HOST_WEBHOOK_SECRET: "token-replay-webhook-secret-0123456789", WEBHOOK_QUEUE: `${REDIS_URL}?prefix=${QUEUE_PREFIX}` };
    processes.push(...(await Promise.all([0, 1].map(() => spawnBroker(env)))));
    const [a, b] = processes as [BrokerProcess, BrokerProcess];
    // A job on each first: each process's first claim opens its Redis connection (see above).
    for (const broker of processes) expect((await post(broker.url, await signed())).status).toBe(200);
    const before = mints();

    const token = await signed();
    expect((await post(a.url, token)).status).toBe(200);
    const replay = await post(b.url, token);
    expect([replay.status, replay.body]).toEqual([409, { error: "oidc_token_replayed" }]);
    // The other way round too, and both at once: one mint per token, whichever instance is asked.
    const other = await signed();
    expect((await post(b.url, other)).status).toBe(200);
    expect((await post(a.url, other)).status).toBe(409);
    const raced = await signed();
    const answers = await Promise.all(processes.flatMap((broker) => Array.from({ length: 8 }, () => post(broker.url, raced))));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, ...Array<number>(15).fill(409)]);
    expect(mints() - before).toBe(3);

    // Where the claims are: under WEBHOOK_QUEUE's prefix, one per token.
    const redis = new Redis(REDIS_URL);
    try {
      expect((await redis.keys(`${QUEUE_PREFIX}:oidc-jti:*`)).length).toBe(5);
    } finally {
      await redis.quit();
    }
  }, 60_000);
});
