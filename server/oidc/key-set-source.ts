import { BrokerError } from "../../shared/broker-error.js";
import { fetchWithTimeout } from "../github/platform-request.js";
import type { Logger } from "../log.js";
import { importKeySet, pickKey, type KeyPick, type KeySet } from "./key-set.js";
import { openSnapshot, sealSnapshot, type SealedSnapshot, type SnapshotBinding } from "./snapshot-seal.js";

/**
 * An issuer's signing keys, found the OIDC way (discovery → jwks_uri) and kept in memory.
 *
 * Cache (see docs/operations.md#caches): the discovery document and the key set, per issuer, per process.
 * Refreshed when older than `maxAgeMs` or when a token names an unknown `kid`, at most once per
 * `cooldownMs` (so a flood of forged kids cannot become a flood of fetches), one fetch at a time.
 * When a fetch fails the last-known-good set is used: in memory first, then the sealed snapshot in
 * SERVICE_JWKS_CACHE (usable for 24 h). With neither: 503 oidc_key_fetch_failed.
 *
 * Verdicts: an unknown `kid` is a 401 `kid_not_found` only against a key set fetched after the
 * token arrived. If that refetch failed or the cooldown held it back, no verdict was reached (the
 * key may have been published a moment ago): 503, retryable, with the wait in `retryAfter`.
 */
interface KeySetSourceOptions {
  issuer: string;
  fetch: typeof fetch;
  now: () => number;
  log: Logger;
  timeoutMs: number;
  cooldownMs: number;
  maxAgeMs: number;
  /** After a failed snapshot write the next waits this long (the store is likely down). */
  snapshotRetryMs: number;
  /** Told of each network fetch's result, and of each use of the snapshot (metrics). */
  onFetched?: (result: "ok" | "failed") => void;
  onSnapshotUsed?: () => void;
}

const SNAPSHOT_MAX_AGE_MS = 24 * 60 * 60 * 1000;

export function createKeySetSource(options: KeySetSourceOptions) {
  const { issuer, log, now } = options;
  let current: KeySet | undefined;
  let jwksUri: string | undefined;
  let lastAttemptAt = Number.NEGATIVE_INFINITY;
  let fetching: Promise<KeySet | undefined> | undefined;
  let fetchesStarted = 0;
  let snapshotWrittenFor: KeySet | undefined;
  let writing: Promise<void> | undefined;
  let lastWriteFailedAt = Number.NEGATIVE_INFINITY;
  let lastRejectWarnedAt = Number.NEGATIVE_INFINITY;
  const snapshotKey = `jwks:${issuer}`;

  const timedFetch = fetchWithTimeout(options.fetch, options.timeoutMs);
  const getJson = async (url: string): Promise<unknown> => {
    const response = await timedFetch(url, { headers: { accept: "application/json" }, redirect: "error" });
    if (!response.ok) throw new Error(`HTTP ${response.status} from ${url}`);
    return response.json();
  };

  const fetchKeySet = async (startedAt: number, fetchNumber: number): Promise<KeySet> => {
    if (!jwksUri) {
      const discovery = (await getJson(`${issuer}/.well-known/openid-configuration`)) as { jwks_uri?: unknown } | null;
      if (typeof discovery?.jwks_uri !== "string") throw new Error("discovery document has no jwks_uri");
      jwksUri = discovery.jwks_uri;
    }
    return importKeySet(await getJson(jwksUri), startedAt, "network", fetchNumber);
  };

  const mayRefetch = () => now() - lastAttemptAt >= options.cooldownMs;
  const usable = (set: KeySet | undefined): set is KeySet => set !== undefined && now() - set.fetchedAt < SNAPSHOT_MAX_AGE_MS;
  const fresh = (set: KeySet | undefined): set is KeySet => set !== undefined && set.source === "network" && now() - set.fetchedAt <= options.maxAgeMs;
  /** Whether `set` came from a fetch that started after the `fetchesStarted` count was `seen` (not a clock: two fetches may share a millisecond). */
  const fetchedSince = (set: KeySet, seen: number) => set.source === "network" && set.fetchNumber > seen;

  /**
   * One network fetch at a time, shared by every caller while it runs; resolves to the new set, or
   * to undefined when it failed (logged). The shared promise is stored before anything can settle
   * it and forgotten only after it has settled, so a settled fetch is never mistaken for one in
   * flight (which once wedged the source until a restart).
   */
  const fetchOnce = (): Promise<KeySet | undefined> => {
    if (fetching) return fetching;
    const startedAt = now();
    lastAttemptAt = startedAt;
    fetchesStarted += 1;
    const run = fetchKeySet(startedAt, fetchesStarted).then(
      (set) => {
        options.onFetched?.("ok");
        current = set;
        return set;
      },
      (error: unknown) => {
        options.onFetched?.("failed");
        jwksUri = undefined; // rediscover next time: the document may be what changed
        log.warn({ issuer, err: String(error).slice(0, 200) }, "OIDC key set fetch failed");
        return undefined;
      },
    );
    fetching = run;
    void run.then(() => {
      if (fetching === run) fetching = undefined;
    });
    return run;
  };

  /** The sealed snapshot in SERVICE_JWKS_CACHE, if it checks out and is under 24 h old. */
  const loadSnapshot = async (binding: SnapshotBinding | null): Promise<KeySet | undefined> => {
    if (!binding) return undefined;
    const stored = await binding.store.get<unknown>(snapshotKey);
    if (stored === undefined) return undefined;
    const opened = openSnapshot(binding.sealKey, stored, issuer);
    if (!opened) {
      // Once a minute at most: during an outage every request reads the store again.
      if (now() - lastRejectWarnedAt >= 60_000) log.warn({ issuer }, "key set snapshot failed its integrity check; ignored");
      lastRejectWarnedAt = now();
      return undefined;
    }
    if (now() - opened.fetchedAt >= SNAPSHOT_MAX_AGE_MS) return undefined;
    try {
      const set = await importKeySet(opened.jwks, opened.fetchedAt, "snapshot", 0);
      if (!current || current.fetchedAt < set.fetchedAt) current = set;
      log.info({ issuer }, "using last-known-good key set snapshot");
      options.onSnapshotUsed?.();
      return set;
    } catch {
      log.warn({ issuer }, "key set snapshot unusable");
      return undefined;
    }
  };

  /** A key set for a request that has none fresh: the network if allowed, else the last-known-good. */
  const obtain = async (binding: SnapshotBinding | null): Promise<KeySet | undefined> => {
    if (fetching || mayRefetch()) {
      const fetched = await fetchOnce();
      if (fetched) return fetched;
    }
    if (usable(current)) return current;
    return loadSnapshot(binding);
  };

  const unavailable = () =>
    new BrokerError("oidc_key_fetch_failed", {
      reason: "jwks_unavailable",
      retryAfter: Math.max(1, (lastAttemptAt + options.cooldownMs - now()) / 1000),
    });

  return {
    issuer,

    /**
     * The key for a token's `kid`. Throws 503 oidc_key_fetch_failed when no key set could be
     * obtained, or when the `kid` is unknown and no key set fetched since the token arrived says so.
     */
    async getKey(kid: string | undefined, binding: SnapshotBinding | null): Promise<KeyPick> {
      const seen = fetchesStarted;
      let set = fresh(current) ? current : await obtain(binding);
      if (!set) throw unavailable();
      let pick = pickKey(set, kid);
      if ("reason" in pick && pick.reason === "kid_not_found" && !fetchedSince(set, seen)) {
        if (fetching || mayRefetch()) {
          set = (await fetchOnce()) ?? set;
          pick = pickKey(set, kid);
        }
        if ("reason" in pick && pick.reason === "kid_not_found" && !fetchedSince(set, seen)) throw unavailable();
      }
      return pick;
    },

    /**
     * After a successful verification: share the set this process fetched as the sealed snapshot.
     * The write runs in the background (a slow or absent store must not delay the answer), one at
     * a time, and after a failed write not again for `snapshotRetryMs`.
     */
    noteVerified(binding: SnapshotBinding | null): void {
      if (!binding || !current || current.source !== "network" || snapshotWrittenFor === current) return;
      if (writing || now() - lastWriteFailedAt < options.snapshotRetryMs) return;
      const set = current;
      const sealed = sealSnapshot(binding.sealKey, { issuer, fetchedAt: set.fetchedAt, jwks: set.jwks });
      writing = binding.store
        .set<SealedSnapshot>(snapshotKey, sealed, SNAPSHOT_MAX_AGE_MS)
        .then((written) => {
          if (written) snapshotWrittenFor = set;
          else lastWriteFailedAt = now();
        })
        .finally(() => {
          writing = undefined;
        });
    },

    /** Whether a usable key set is held (fetched, or a snapshot under 24 h old): /readyz asks. */
    held(): boolean {
      return usable(current);
    },

    /**
     * Obtains a key set now unless one is held, so readiness does not wait for the first job's
     * request to fetch it. Under the same cooldown as requests: a polling probe cannot hammer the issuer.
     */
    async prime(binding: SnapshotBinding | null): Promise<boolean> {
      if (!usable(current)) await obtain(binding);
      return usable(current);
    },

    /** Resolves when a snapshot write in progress has finished (for orderly shutdown and tests). */
    async settled(): Promise<void> {
      await writing;
    },
  };
}

export type KeySetSource = ReturnType<typeof createKeySetSource>;
