import { createLoadingCache } from "../cache/loading-cache.js";
import type { Installation } from "./find-installation.js";

/**
 * Repository → installation (id and granted permissions), per platform and App, on the cache
 * primitive (docs/design.md#caches). Key = API base + App ID + subject (`installationSubject`: the
 * repository id and owner id for /token, so a renamed owner or a re-created repository never hits
 * a stale entry; `owner/repo` for /sign; lowercased: names are case-insensitive on the platform);
 * lifetime 5 minutes; dropped when a mint fails (404, 422, …) or its answer names another
 * repository, and a lookup under way when that happens is not kept. Bounded in size. Concurrent
 * misses for one key share one lookup; its failure is given to every waiter and not kept.
 */
export function createInstallationCache(options: { now: () => number; ttlMs: number; maxEntries?: number }) {
  const cache = createLoadingCache<Installation>({ max: options.maxEntries ?? 10_000, now: options.now });
  const keepFor = () => options.ttlMs;
  return {
    key: (apiBase: string, appId: string, subject: string) => `${apiBase}\u0000${appId}\u0000${subject.toLowerCase()}`,
    /** The installation kept for this key if it is still fresh; never looks it up. */
    get(key: string): Installation | undefined {
      return cache.peek(key);
    },
    /** The fresh installation kept for this key, or `lookup()` run once for every caller asking at the same time. */
    load(key: string, lookup: () => Promise<Installation>): Promise<Installation> {
      return cache.get(key, lookup, keepFor);
    },
    drop(key: string): void {
      cache.invalidate(key);
    },
  };
}

export type InstallationCache = ReturnType<typeof createInstallationCache>;
