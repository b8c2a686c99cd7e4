// SERVICE_JWKS_CACHE: the last-known-good key set shared through Redis between brokers: two built
// broker processes in the first test; in the others brokers in this process, each with its own key
// set in memory and nothing shared but Redis (each process costs about 0.5 s of CPU to start), with
// the built broker's own timings and retries. Runs against the real Redis the suite starts
// (support/redis-url.ts).
import { generateKeyPairSync } from "node:crypto";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { DEFAULT_TIMING } from "../server/context.js";
import { DEFAULT_RETRY } from "../server/github/platform-request.js";
import { openKeyValueStore, type KeyValueStore } from "../server/kv/key-value-store.js";
import { createLogger } from "../server/log.js";
import { postJson, startBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker } from "./support/spawn-broker.js";
import { REDIS_URL } from "./support/redis-url.js";

let fx: TokenFixture;
let redis: KeyValueStore;
/** A broker as the tests use it: its address, and every line it has logged. */
interface Broker {
  url: string;
  lines: string[];
  stop(): Promise<unknown>;
}
const brokers: Broker[] = [];
const secrets: string[] = [];
const SHARED = { SERVICE_JWKS_CACHE: REDIS_URL };

beforeAll(async () => {
  fx = await tokenFixture();
  // The test's own view of the brokers' namespace: what anyone with write access to Redis sees.
  const quiet = createLogger({ destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
  redis = openKeyValueStore(SHARED.SERVICE_JWKS_CACHE, "tokensmith-jwks", { log: quiet, timeoutMs: 2000 });
  secrets.push(fx.app.privateKeyPem);
});
afterAll(async () => {
  await redis.close();
  await Promise.all(brokers.map((b) => b.stop()));
  await fx.sim.close();
  expectNoSecrets(brokers.flatMap((b) => b.lines), secrets);
});

/** A built broker process. */
async function spawned(env: Record<string, string | undefined>): Promise<Broker> {
  const broker = await spawnBroker({ ...fx.env, LOG_LEVEL: "debug", ...env });
  brokers.push(broker);
  return broker;
}

/** A broker in this process, timed and retrying as a built one (not the suite's fast test timings). */
async function start(env: Record<string, string | undefined>): Promise<Broker> {
  const started = await startBroker({ ...fx.env, LOG_LEVEL: "debug", ...env }, { timing: DEFAULT_TIMING, retry: DEFAULT_RETRY });
  const broker = { url: started.url, lines: started.logs, stop: () => started.close() };
  brokers.push(broker);
  return broker;
}

/**
 * Several brokers started at once (a broker reads its key set, and the snapshot, on its first
 * request, not at start-up): the test then uses each in turn, as if it had just been started.
 */
async function startAll(envs: Array<Record<string, string | undefined>>) {
  return Promise.all(envs.map((env) => start(env)));
}

async function exchange(broker: Broker, oidcToken?: string) {
  oidcToken ??= await fx.sim.oidc.sign();
  secrets.push(oidcToken);
  const res = await postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

const snapshotKey = () => `jwks:${fx.sim.oidc.issuer}`;

/** Waits for a broker's background snapshot write to land (bounded; the store answers in ms). */
async function storedSnapshot(notTag?: unknown): Promise<Record<string, unknown>> {
  for (let i = 0; i < 100; i += 1) {
    const value = await redis.get<Record<string, unknown>>(snapshotKey());
    if (value?.tag && value.tag !== notTag) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("no sealed snapshot was written");
}

/** The process's log lines that include `text`, once at least one has arrived (its stdout trails the answer). */
async function linesWith(broker: Broker, text: string): Promise<string[]> {
  for (let i = 0; i < 100; i += 1) {
    const found = broker.lines.filter((line) => line.includes(text));
    if (found.length > 0) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return [];
}

/** A key of the attacker's own, published in a planted snapshot under kid "planted". */
async function attackerKey() {
  const { generateKeyPair, exportJWK } = await import("jose");
  const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid: "planted", alg: "RS256", use: "sig" } };
}

describe("SERVICE_JWKS_CACHE=redis://", () => {
  it("lets a second broker process verify with the shared snapshot while the key endpoint is down", async () => {
    fx.sim.oidc.keyEndpoint = "ok";
    const shared = { SERVICE_JWKS_CACHE: REDIS_URL };
    // Two processes: nothing but Redis between them.
    const [first, second] = await Promise.all([spawned(shared), spawned(shared)]);
    const unbound = await start({});
    expect((await exchange(first!)).status).toBe(200);

    fx.sim.oidc.keyEndpoint = "fail";
    const res = await exchange(second!);
    expect(res.body).toMatchObject({ repository: "octo-org/app" });
    expect(res.status).toBe(200);

    const refused = await exchange(unbound);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
  });

  it("keeps answering when the Redis URL points at nothing", async () => {
    fx.sim.oidc.keyEndpoint = "ok";
    const broker = await start({ SERVICE_JWKS_CACHE: "redis://127.0.0.1:1" });
    const started = Date.now();
    expect((await exchange(broker)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("ignores, and logs, a planted snapshot: a forged token is not verified with the planted key", async () => {
    fx.sim.oidc.keyEndpoint = "ok";
    await redis.set(snapshotKey(), { reset: true }, 60_000);
    const [writer, ...readers] = await startAll([SHARED, SHARED, SHARED, SHARED]);
    expect((await exchange(writer!)).status).toBe(200);
    const sealed = await storedSnapshot();
    expect(Object.keys(sealed).sort()).toEqual(["fetchedAt", "issuer", "jwks", "tag", "v"]);

    // Whoever can write Redis swaps in a key set of their own, in every shape they might try.
    const attacker = await attackerKey();
    const forged = await fx.sim.oidc.sign({}, { privateKey: attacker.privateKey, kid: "planted" });
    const keys = [attacker.jwk];
    const plants = [
      { issuer: fx.sim.oidc.issuer, jwks: { keys }, fetchedAt: Date.now() }, // unsealed (the old shape)
      { ...sealed, jwks: JSON.stringify({ keys }) }, // the genuine tag over a new key set
      { ...sealed, jwks: JSON.stringify({ keys: [...(JSON.parse(sealed.jwks as string) as { keys: unknown[] }).keys, attacker.jwk] }) },
    ];
    fx.sim.oidc.keyEndpoint = "fail";
    expect(readers).toHaveLength(plants.length);
    for (const [i, planted] of plants.entries()) {
      await redis.set(snapshotKey(), planted, 60_000);
      const reader = readers[i]!;
      const res = await exchange(reader, forged);
      expect(res.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
      expect(res.status).toBe(503);
      const warned = await linesWith(reader, "key set snapshot failed its integrity check");
      expect(warned.length).toBeGreaterThanOrEqual(1);
      expect(warned.join("\n")).not.toContain("planted");
    }
  });

  it("ignores a snapshot sealed under another App key (a rotated key), until a fetch rewrites it", async () => {
    fx.sim.oidc.keyEndpoint = "ok";
    await redis.set(snapshotKey(), { reset: true }, 60_000);
    const old = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    secrets.push(old);
    const [before, after, rewriter, last] = await startAll([{ ...SHARED, HOST_APP_PRIVATE_KEY: old }, SHARED, SHARED, SHARED]);
    const verified = await exchange(before!); // verified; then the simulator refuses the old App key's JWT
    expect(verified.body?.error).not.toMatch(/oidc/);
    const stale = await storedSnapshot();

    fx.sim.oidc.keyEndpoint = "fail";
    const refused = await exchange(after!);
    expect(refused.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
    expect(await linesWith(after!, "key set snapshot failed its integrity check")).not.toHaveLength(0);

    fx.sim.oidc.keyEndpoint = "ok";
    expect((await exchange(rewriter!)).status).toBe(200);
    await storedSnapshot(stale.tag);
    fx.sim.oidc.keyEndpoint = "fail";
    expect((await exchange(last!)).status).toBe(200);
  });

  it("writes no snapshot without an App key to seal it", async () => {
    fx.sim.oidc.keyEndpoint = "ok";
    await redis.set(snapshotKey(), { reset: true }, 60_000);
    const keyless = await start({ ...SHARED, HOST_APP_PRIVATE_KEY: undefined });
    const res = await exchange(keyless);
    expect(res.body).toEqual({ error: "app_unconfigured" });
    await keyless.stop(); // its background write, if any, has finished
    expect(await redis.get(snapshotKey())).toEqual({ reset: true });
  });
});
