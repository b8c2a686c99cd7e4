// A model-based test of the key-set source (server/oidc/key-set-source.ts): random sequences of
// issuer up / down / garbage / hang / no usable key / key rotation, clock advances, restarts,
// planted snapshots and requests (alone or several at once, with and without a snapshot store),
// run against the real createKeySetSource and verifyOidcToken with a fake clock and a scripted
// issuer. After every step:
// - once the issuer has answered well (with its current keys) for at least the cooldown, a token
//   signed with its current key verifies (the source never wedges);
// - a token signed with a published key never gets the final 401 kid_not_found;
// - a token with a forged kid or a planted key never verifies;
// - every failure is 401 invalid_oidc_token or 503 oidc_key_fetch_failed with a Retry-After;
// - key-set fetches start at least a cooldown apart.
import { randomBytes, type KeyObject } from "node:crypto";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { BrokerError } from "../shared/broker-error.js";
import { openKeyValueStore, type KeyValueStore } from "../server/kv/key-value-store.js";
import { createLogger } from "../server/log.js";
import { createKeySetSource, type KeySetSource } from "../server/oidc/key-set-source.js";
import { deriveSnapshotKey, sealSnapshot, type SnapshotBinding } from "../server/oidc/snapshot-seal.js";
import { verifyOidcToken } from "../server/oidc/verify-oidc-token.js";
import { signCompact } from "../simulator/jws.js";
import { keepLogs } from "./support/log-sink.js";
import { ensureSpareKeys, takeKeyPair, type RsaKeyPair } from "../simulator/key-pool.js";

const ISSUER = "https://issuer.model.test";
const COOLDOWN_MS = 5_000;
const MAX_AGE_MS = 10 * 60_000;
/** Real milliseconds a hanging issuer holds a fetch before the source's timeout gives up. */
const FETCH_TIMEOUT_MS = 25;
const START = 1_800_000_000_000;

type Mode = "up" | "down" | "garbage" | "hang" | "nokeys";
interface PublishedKey {
  kid: string;
  pair: RsaKeyPair;
}

let pool: RsaKeyPair[] = [];
let attacker: RsaKeyPair;
const logLines: string[] = [];
const log = createLogger({
  level: "debug",
  destination: new Writable({
    write(chunk, _encoding, done) {
      logLines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  }),
});
const sealKey = deriveSnapshotKey("model test App key");
const stores: KeyValueStore[] = [];

beforeAll(async () => {
  await ensureSpareKeys(4);
  pool = [takeKeyPair(), takeKeyPair(), takeKeyPair()];
  attacker = takeKeyPair();
});
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  keepLogs(logLines); // the suite's log scan reads these too
  // No key material, snapshot or token ever reaches the log.
  for (const line of logLines) expect(line).not.toMatch(/eyJ|"n":|BEGIN|"keys"/);
});

const publicJwk = (key: PublishedKey) => {
  const jwk = key.pair.publicKey.export({ format: "jwk" });
  return { kty: "RSA", alg: "RS256", use: "sig", kid: key.kid, n: String(jwk.n), e: String(jwk.e) };
};
const newKey = (index: number): PublishedKey => ({ kid: randomBytes(8).toString("hex"), pair: pool[index % pool.length]! });

/** The system under test and the scripted world around it. */
class World {
  clock = START;
  mode: Mode = "up";
  keys: PublishedKey[] = [newKey(0)];
  /** Fake time of every HTTP call the source made, in order. */
  calls: Array<{ at: number; what: "discovery" | "jwks"; process: number }> = [];
  /** Restarts so far: each is a new process, with a cooldown of its own. */
  process = 0;
  store: KeyValueStore;
  source!: KeySetSource;

  constructor(store: KeyValueStore) {
    this.store = store;
    this.restart();
  }

  restart(): void {
    this.process += 1;
    this.source = createKeySetSource({
      issuer: ISSUER, fetch: this.fetch, now: () => this.clock, log,
      timeoutMs: FETCH_TIMEOUT_MS, cooldownMs: COOLDOWN_MS, maxAgeMs: MAX_AGE_MS, snapshotRetryMs: 1_000,
    });
  }

  fetch: typeof fetch = async (input, init) => {
    const url = String(input);
    const what = url.endsWith("/.well-known/openid-configuration") ? "discovery" : "jwks";
    this.calls.push({ at: this.clock, what, process: this.process });
    const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
    switch (this.mode) {
      case "down":
        return json({ message: "Service Unavailable" }, 503);
      case "garbage":
        return new Response("not json{", { status: 200, headers: { "content-type": "application/json" } });
      case "hang":
        return new Promise<Response>((_, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason as Error)));
      case "nokeys":
        if (what === "discovery") return json({ issuer: ISSUER, jwks_uri: `${ISSUER}/.well-known/jwks` });
        return json({ keys: [{ kty: "EC", crv: "P-256", kid: "ec", x: "x", y: "y" }, { kty: "RSA", kid: "enc", use: "enc", n: "AQAB", e: "AQAB" }] });
      default:
        if (what === "discovery") return json({ issuer: ISSUER, jwks_uri: `${ISSUER}/.well-known/jwks` });
        return json({ keys: this.keys.map(publicJwk) });
    }
  };

  token(kind: "current" | "forged" | "planted"): string {
    const iat = Math.floor(this.clock / 1000);
    const claims = { iss: ISSUER, aud: "tokensmith", repository: "octo-org/app", iat, nbf: iat, exp: iat + 300 };
    const signer: { kid: string; privateKey: KeyObject } =
      kind === "current" ? { kid: this.keys[0]!.kid, privateKey: this.keys[0]!.pair.privateKey }
      : kind === "planted" ? { kid: "planted", privateKey: attacker.privateKey }
      : { kid: `forged-${randomBytes(4).toString("hex")}`, privateKey: this.keys[0]!.pair.privateKey };
    return signCompact({ alg: "RS256", typ: "JWT", kid: signer.kid }, claims, signer.privateKey);
  }

  /** One /token's verification: "ok", or the error's code and reason. */
  async verify(token: string, withStore: boolean): Promise<{ outcome: string; retryAfter?: number }> {
    const binding: SnapshotBinding | null = withStore ? { store: this.store, sealKey } : null;
    try {
      await verifyOidcToken({ token, issuers: [{ issuer: ISSUER, keys: this.source, platform: null }], audiences: ["tokensmith"], now: () => this.clock, snapshot: binding });
      return { outcome: "ok" };
    } catch (error) {
      if (!(error instanceof BrokerError)) throw error;
      return { outcome: `${error.code}/${error.reason}`, retryAfter: error.retryAfter };
    } finally {
      await this.source.settled();
    }
  }
}

interface Model {
  /** Fake time since which the issuer has answered well with its current keys; null while it does not. */
  goodSince: number | null;
  planted: boolean;
}

type Command = fc.AsyncCommand<Model, World>;

class SetMode implements Command {
  constructor(readonly mode: Mode) {}
  check = () => true;
  async run(model: Model, world: World) {
    if (this.mode === "up" && world.mode !== "up") model.goodSince = world.clock;
    if (this.mode !== "up") model.goodSince = null;
    world.mode = this.mode;
  }
  toString = () => `issuer ${this.mode}`;
}

class Rotate implements Command {
  constructor(readonly keepOld: boolean, readonly index: number) {}
  check = () => true;
  async run(model: Model, world: World) {
    const fresh = newKey(this.index);
    world.keys = this.keepOld ? [fresh, ...world.keys].slice(0, 3) : [fresh];
    if (world.mode === "up") model.goodSince = world.clock;
  }
  toString = () => `rotate${this.keepOld ? " (keep old)" : ""}`;
}

class Advance implements Command {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(_model: Model, world: World) {
    world.clock += this.ms;
  }
  toString = () => `advance ${this.ms} ms`;
}

class Restart implements Command {
  check = () => true;
  async run(_model: Model, world: World) {
    world.restart();
  }
  toString = () => "restart";
}

/** Someone with write access to the store plants a key, in one of the ways a forger would try. */
class Plant implements Command {
  constructor(readonly how: "unsealed" | "other-key" | "altered") {}
  check = () => true;
  async run(model: Model, world: World) {
    const keys = [{ ...publicJwk({ kid: "planted", pair: attacker }) }];
    const fetchedAt = world.clock;
    const value =
      this.how === "unsealed" ? { issuer: ISSUER, jwks: { keys }, fetchedAt }
      : this.how === "other-key" ? sealSnapshot(deriveSnapshotKey("another App key"), { issuer: ISSUER, fetchedAt, jwks: { keys } })
      : { ...sealSnapshot(sealKey, { issuer: ISSUER, fetchedAt, jwks: { keys: world.keys.map(publicJwk) } }), jwks: JSON.stringify({ keys }) };
    await world.store.set(`jwks:${ISSUER}`, value, 24 * 3600_000);
    model.planted = true;
  }
  toString = () => `plant a snapshot (${this.how})`;
}

class Request implements Command {
  constructor(readonly kind: "current" | "forged" | "planted", readonly withStore: boolean, readonly parallel: number) {}
  check = () => true;
  async run(model: Model, world: World) {
    const tokens = Array.from({ length: this.parallel }, () => world.token(this.kind));
    const results = await Promise.all(tokens.map((token) => world.verify(token, this.withStore)));
    for (const { outcome, retryAfter } of results) {
      expect(["ok", "invalid_oidc_token/kid_not_found", "oidc_key_fetch_failed/jwks_unavailable"]).toContain(outcome);
      if (outcome.startsWith("oidc_key_fetch_failed")) {
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(Math.ceil(COOLDOWN_MS / 1000));
      }
      if (this.kind !== "current") expect(outcome).not.toBe("ok");
      if (this.kind === "current") expect(outcome).not.toBe("invalid_oidc_token/kid_not_found");
      if (this.kind === "current" && model.goodSince !== null && world.clock - model.goodSince >= COOLDOWN_MS) expect(outcome).toBe("ok");
    }
  }
  toString = () => `${this.parallel} × ${this.kind} token ${this.withStore ? "with" : "without"} store`;
}

/** In each process, fetch attempts (a discovery call, or a key-set call not right after one) start a cooldown apart. */
function expectFetchesSpaced(world: World): void {
  const starts = world.calls.filter((call, i) => call.what === "discovery" || world.calls[i - 1]?.what !== "discovery");
  for (let i = 1; i < starts.length; i += 1) {
    if (starts[i]!.process === starts[i - 1]!.process) expect(starts[i]!.at - starts[i - 1]!.at).toBeGreaterThanOrEqual(COOLDOWN_MS);
  }
}

const commands = [
  fc.constantFrom<Mode>("up", "down", "garbage", "hang", "nokeys").map((mode) => new SetMode(mode)),
  fc.tuple(fc.boolean(), fc.nat(2)).map(([keepOld, index]) => new Rotate(keepOld, index)),
  fc.oneof(fc.integer({ min: 0, max: 12_000 }), fc.constantFrom(COOLDOWN_MS - 1, COOLDOWN_MS, MAX_AGE_MS + 1)).map((ms) => new Advance(ms)),
  fc.constant(new Restart()),
  fc.constantFrom("unsealed", "other-key", "altered").map((how) => new Plant(how as Plant["how"])),
  fc.tuple(fc.constantFrom("current", "current", "forged", "planted"), fc.boolean(), fc.integer({ min: 1, max: 3 })).map(
    ([kind, withStore, parallel]) => new Request(kind as Request["kind"], withStore, parallel),
  ),
];

describe("key-set source, model-based", () => {
  it("never wedges, never gives a published key a final 401, never trusts a planted key, and fetches at most once per cooldown", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
        const store = openKeyValueStore("memory://", `model-${(run += 1)}`, { log, timeoutMs: 500 });
        stores.push(store);
        const world = new World(store);
        const model: Model = { goodSince: world.clock, planted: false };
        await fc.asyncModelRun(() => ({ model, real: world }), [...cmds]);
        expectFetchesSpaced(world);
        // The exact sequence of the wedge, appended to every run: whatever came before, once the
        // issuer is back for longer than a cooldown, the next request verifies.
        world.mode = "up";
        world.clock += COOLDOWN_MS;
        expect((await world.verify(world.token("current"), false)).outcome).toBe("ok");
        expectFetchesSpaced(world);
      }),
      { numRuns: 200 },
    );
  });

  it("does not wedge after two requests inside the cooldown while the issuer is down, without a store (issue 11 item 1)", async () => {
    const world = new World(openKeyValueStore("memory://", "model-wedge", { log, timeoutMs: 500 }));
    stores.push(world.store);
    world.mode = "down";
    expect((await world.verify(world.token("current"), false)).outcome).toBe("oidc_key_fetch_failed/jwks_unavailable");
    expect((await world.verify(world.token("current"), false)).outcome).toBe("oidc_key_fetch_failed/jwks_unavailable");
    world.mode = "up";
    world.clock += 3_600_000;
    expect((await world.verify(world.token("current"), false)).outcome).toBe("ok");
    expect(world.calls.filter((call) => call.what === "jwks")).toHaveLength(1);
  });
});
