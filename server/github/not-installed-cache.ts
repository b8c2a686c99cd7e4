// "The App is not installed on this repository", remembered briefly (docs/operations.md#caches). Anyone can
// mint an OIDC token for our audience from a repository of their own: without this, every replay
// of it cost an installation lookup, a point of the App's budget, and a flood of them spent the
// budget real callers need (docs/security.md, "Replays for repositories without the App cost
// nothing").
//
// Key: the installation cache's (API base + App ID + `installationSubject`: the claims' repository
// id and owner id), so a renamed owner or a re-created repository never finds another's entry.
// Only /token's answers are kept (ids known); /sign is behind a secret.
// In process, the first level; with a shared store the instances share the answers too
// (not-installed-check.ts), and a restart starts empty. Dropped, for one account (or all when the
// delivery names none), by a verified `installation` or `installation_repositories` delivery, so a
// newly installed App is found at once on the instance that received it (and on every instance
// when the answers are shared; otherwise the others find it within the lifetime).

/** GitHub Apps get installed by hand: a minute is short enough for a job retried after an install. */
export const NOT_INSTALLED_TTL_MS = 60_000;
export const MAX_NOT_INSTALLED = 10_000;

export interface NotInstalledCache {
  /** Whether this key was answered "not installed" less than the lifetime ago. */
  has(key: string): boolean;
  /**
   * A lookup started at `generation` answered "not installed" for the owner `ownerId`: remembered,
   * unless a drop came since (the installation it would hide may be the one just announced).
   */
  add(key: string, ownerId: number, generation: number, ttlMs?: number): void;
  /** A delivery said this account's installations changed (undefined: some account's). */
  dropOwner(ownerId: number | undefined): void;
  /** Taken before a lookup, given back to `add`. */
  readonly generation: number;
  readonly size: number;
  /** How long an answer is kept (when `add` is not told otherwise). */
  readonly ttlMs: number;
}

export function createNotInstalledCache(options: { now: () => number; ttlMs?: number; maxEntries?: number }): NotInstalledCache {
  const ttlMs = options.ttlMs ?? NOT_INSTALLED_TTL_MS;
  const max = options.maxEntries ?? MAX_NOT_INSTALLED;
  /** Key → when it expires and whose repository it is. Insertion order = expiry order (one lifetime; an answer from the shared store has less left, and is dropped when read after it or pushed out oldest first). */
  const entries = new Map<string, { until: number; ownerId: number }>();
  let generation = 0;

  return {
    get generation() {
      return generation;
    },
    get size() {
      return entries.size;
    },
    ttlMs,
    has(key) {
      const hit = entries.get(key);
      if (!hit) return false;
      if (options.now() < hit.until) return true;
      entries.delete(key);
      return false;
    },
    // `lifetime`: an answer learnt from the shared store keeps only what is left of its own.
    add(key, ownerId, since, lifetime = ttlMs) {
      if (since !== generation) return;
      entries.delete(key);
      // Expired entries first, then the oldest: a flood of distinct repositories cannot grow it.
      const at = options.now();
      for (const [old, hit] of entries) {
        if (hit.until > at && entries.size < max) break;
        entries.delete(old);
      }
      entries.set(key, { until: at + lifetime, ownerId });
    },
    dropOwner(ownerId) {
      generation += 1;
      if (ownerId === undefined) return entries.clear();
      for (const [key, hit] of entries) if (hit.ownerId === ownerId) entries.delete(key);
    },
  };
}
