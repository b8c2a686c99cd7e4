import type { Installation } from "./find-installation.js";

/**
 * Repository → installation (id and granted permissions), per platform and App.
 * Cache (docs/operations.md#caches): key = API base + App ID + subject (`installationSubject`: the
 * repository id and owner id for /token, so a renamed owner or a re-created repository never hits a
 * stale entry; `owner/repo` for /sign; lowercased: names are case-insensitive on the platform);
 * lifetime 5 minutes; dropped when a mint fails (404, 422, …) or its answer names another
 * repository. Bounded in size.
 * Concurrent misses for one key share one lookup (`shared`): the in-flight promise is kept only
 * until it settles; its failure is given to every waiter and not cached.
 */
export function createInstallationCache(options: { now: () => number; ttlMs: number; maxEntries?: number }) {
  const entries = new Map<string, { value: Installation; until: number }>();
  const max = options.maxEntries ?? 10_000;
  const inFlight = new Map<string, Promise<Installation>>();
  return {
    /** The lookup already running for this key, or `load()` started now and shared until it settles. */
    shared(key: string, load: () => Promise<Installation>): Promise<Installation> {
      let running = inFlight.get(key);
      if (!running) {
        running = load().finally(() => inFlight.delete(key));
        inFlight.set(key, running);
      }
      return running;
    },
    key: (apiBase: string, appId: string, subject: string) => `${apiBase}\u0000${appId}\u0000${subject.toLowerCase()}`,
    get(key: string): Installation | undefined {
      const hit = entries.get(key);
      if (!hit) return undefined;
      if (options.now() >= hit.until) {
        entries.delete(key);
        return undefined;
      }
      return hit.value;
    },
    set(key: string, value: Installation): void {
      if (entries.size >= max) entries.delete(entries.keys().next().value as string);
      entries.set(key, { value, until: options.now() + options.ttlMs });
    },
    drop(key: string): void {
      entries.delete(key);
    },
  };
}

export type InstallationCache = ReturnType<typeof createInstallationCache>;
