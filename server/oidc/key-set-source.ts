import { importJWK, type JWK } from "jose";
import { BrokerError } from "../../shared/broker-error.js";
import { fetchWithTimeout } from "../github/platform-request.js";
import type { KeyValueStore } from "../kv/key-value-store.js";
import type { Logger } from "../log.js";

type VerifyKey = Awaited<ReturnType<typeof importJWK>>;

/**
 * An issuer's signing keys, found the OIDC way (discovery → jwks_uri) and kept in memory.
 *
 * Cache (see README "Caches"): the discovery document and the key set, per issuer, per process.
 * Refreshed when older than `maxAgeMs` or when a token names an unknown `kid`, at most once per
 * `cooldownMs` (so a flood of forged kids cannot become a flood of fetches), one fetch at a time.
 * When a fetch fails the last-known-good set is used: in memory first, then the snapshot in
 * SERVICE_JWKS_CACHE (usable for 24 h). With neither: 503 oidc_key_fetch_failed.
 */
export interface KeySetSourceOptions {
  issuer: string;
  fetch: typeof fetch;
  now: () => number;
  log: Logger;
  timeoutMs: number;
  cooldownMs: number;
  maxAgeMs: number;
  /** After a failed snapshot write the next waits this long (the store is likely down). */
  snapshotRetryMs: number;
}

interface KeySet {
  jwks: { keys: JWK[] };
  keys: Array<{ kid: string | undefined; key: VerifyKey }>;
  fetchedAt: number;
  source: "network" | "snapshot";
}

interface Snapshot {
  issuer: string;
  jwks: { keys: JWK[] };
  fetchedAt: number;
}

export const SNAPSHOT_MAX_AGE_MS = 24 * 60 * 60 * 1000;

export type KeyPick = { key: VerifyKey } | { reason: "kid_not_found" | "key_ambiguous" };

export function createKeySetSource(options: KeySetSourceOptions) {
  let current: KeySet | undefined;
  let jwksUri: string | undefined;
  let lastAttemptAt = Number.NEGATIVE_INFINITY;
  let inFlight: Promise<KeySet | undefined> | undefined;
  let snapshotWrittenFor: number | undefined;
  let writing: Promise<void> | undefined;
  let lastWriteFailedAt = Number.NEGATIVE_INFINITY;
  const snapshotKey = `jwks:${options.issuer}`;

  const timedFetch = fetchWithTimeout(options.fetch, options.timeoutMs);
  const getJson = async (url: string): Promise<unknown> => {
    const response = await timedFetch(url, { headers: { accept: "application/json" }, redirect: "error" });
    if (!response.ok) throw new Error(`HTTP ${response.status} from ${url}`);
    return response.json();
  };

  const fetchKeySet = async (): Promise<KeySet> => {
    if (!jwksUri) {
      const discovery = (await getJson(`${options.issuer}/.well-known/openid-configuration`)) as { jwks_uri?: unknown } | null;
      if (typeof discovery?.jwks_uri !== "string") throw new Error("discovery document has no jwks_uri");
      jwksUri = discovery.jwks_uri;
    }
    const jwks = await getJson(jwksUri);
    return importKeySet(jwks, options.now(), "network");
  };

  /** One fetch at a time; on failure fall back to what we have, then to the shared snapshot. */
  const refresh = (store: KeyValueStore | null, network: boolean): Promise<KeySet | undefined> => {
    inFlight ??= (async () => {
      try {
        if (!network) throw new Error("refetch cooldown");
        lastAttemptAt = options.now();
        current = await fetchKeySet();
        return current;
      } catch (error) {
        if (network) {
          jwksUri = undefined; // rediscover next time: the document may be what changed
          options.log.warn({ issuer: options.issuer, err: String(error).slice(0, 200) }, "OIDC key set fetch failed");
        }
        if (current && options.now() - current.fetchedAt < SNAPSHOT_MAX_AGE_MS) return current;
        const snapshot = store ? await store.get<Snapshot>(snapshotKey) : undefined;
        if (snapshot && snapshot.issuer === options.issuer && options.now() - snapshot.fetchedAt < SNAPSHOT_MAX_AGE_MS) {
          try {
            current = await importKeySet(snapshot.jwks, snapshot.fetchedAt, "snapshot");
            options.log.info({ issuer: options.issuer }, "using last-known-good key set snapshot");
            return current;
          } catch {
            options.log.warn({ issuer: options.issuer }, "key set snapshot unusable");
          }
        }
        return undefined;
      } finally {
        inFlight = undefined;
      }
    })();
    return inFlight;
  };

  const mayRefetch = () => options.now() - lastAttemptAt >= options.cooldownMs;

  return {
    issuer: options.issuer,

    /** The key for a token's `kid`; throws 503 when no key set could be obtained at all. */
    async getKey(kid: string | undefined, store: KeyValueStore | null): Promise<KeyPick> {
      let set = current;
      const stale = !set || set.source === "snapshot" || options.now() - set.fetchedAt > options.maxAgeMs;
      // Without any key set and inside the cooldown only the shared snapshot is consulted.
      if (stale && (mayRefetch() || !set)) set = (await refresh(store, mayRefetch())) ?? set;
      if (!set) throw new BrokerError("oidc_key_fetch_failed", { reason: "jwks_unavailable" });
      let pick = pickKey(set, kid);
      if ("reason" in pick && pick.reason === "kid_not_found" && mayRefetch()) {
        set = (await refresh(store, true)) ?? set;
        pick = pickKey(set, kid);
      }
      return pick;
    },

    /**
     * After a successful verification: share the set this process fetched as the snapshot. The
     * write runs in the background (a slow or absent store must not delay the answer), one at a
     * time, and after a failed write not again for `snapshotRetryMs`.
     */
    noteVerified(store: KeyValueStore | null): void {
      if (!store || !current || current.source !== "network" || snapshotWrittenFor === current.fetchedAt) return;
      if (writing || options.now() - lastWriteFailedAt < options.snapshotRetryMs) return;
      const set = current;
      writing = store
        .set<Snapshot>(snapshotKey, { issuer: options.issuer, jwks: set.jwks, fetchedAt: set.fetchedAt }, SNAPSHOT_MAX_AGE_MS)
        .then((written) => {
          if (written) snapshotWrittenFor = set.fetchedAt;
          else lastWriteFailedAt = options.now();
        })
        .finally(() => {
          writing = undefined;
        });
    },

    /** Resolves when a snapshot write in progress has finished (for orderly shutdown and tests). */
    async settled(): Promise<void> {
      await writing;
    },
  };
}

export type KeySetSource = ReturnType<typeof createKeySetSource>;

async function importKeySet(jwks: unknown, fetchedAt: number, source: KeySet["source"]): Promise<KeySet> {
  const list = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(list)) throw new Error("key set has no keys array");
  const keys: KeySet["keys"] = [];
  for (const jwk of list as JWK[]) {
    // Only RSA signing keys can verify an RS256 token; anything else is skipped, not fatal.
    if (jwk?.kty !== "RSA" || (jwk.use !== undefined && jwk.use !== "sig")) continue;
    if (jwk.alg !== undefined && jwk.alg !== "RS256") continue;
    try {
      const key = await importJWK({ ...jwk, alg: "RS256", ext: false }, "RS256");
      keys.push({ kid: typeof jwk.kid === "string" ? jwk.kid : undefined, key });
    } catch {
      // A malformed key in the set does not invalidate the others.
    }
  }
  if (keys.length === 0) throw new Error("key set has no usable RS256 key");
  return { jwks: { keys: list as JWK[] }, keys, fetchedAt, source };
}

function pickKey(set: KeySet, kid: string | undefined): KeyPick {
  if (kid !== undefined) {
    const found = set.keys.find((k) => k.kid === kid);
    return found ? { key: found.key } : { reason: "kid_not_found" };
  }
  if (set.keys.length === 1) return { key: set.keys[0]!.key };
  return { reason: "key_ambiguous" };
}
