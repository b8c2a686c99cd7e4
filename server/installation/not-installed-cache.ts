// "The App is not installed on this repository", remembered briefly (docs/design.md#caches). Anyone can
// mint an OIDC token for our audience from a repository of their own: without this, every replay
// of it cost an installation lookup, a point of the App's budget, and a flood of them spent the
// budget real callers need (docs/security.md, "Replays for repositories without the App cost
// nothing").
//
// Key: the installation cache's (API base + App ID + `installationSubject`: the claims' repository
// id and owner id), so a renamed owner or a re-created repository never finds another's entry.
// Only /token's answers are kept (ids known); /sign is behind a secret.
// In process, the first level, on the cache primitive (server/cache/loading-cache.ts); with a
// shared store the instances share the answers too (not-installed-check.ts), and a restart starts
// empty. Dropped, for one account (or all when the delivery names none), by a verified
// `installation` or `installation_repositories` delivery, so a newly installed App is found at
// once on the instance that received it (and on every instance when the answers are shared;
// otherwise the others find it within the lifetime). A lookup that started before such a drop is
// not remembered (the primitive's stamp).
import { createLoadingCache, type Stamp } from "../cache/loading-cache.js";

/** GitHub Apps get installed by hand: a minute is short enough for a job retried after an install. */
const NOT_INSTALLED_TTL_MS = 60_000;
const MAX_NOT_INSTALLED = 10_000;

export interface NotInstalledCache {
  /** Whether this key was answered "not installed" less than the lifetime ago. */
  has(key: string): boolean;
  /**
   * A lookup started at `generation` answered "not installed" for the owner `ownerId`: remembered,
   * unless a drop came since (the installation it would hide may be the one just announced).
   */
  add(key: string, ownerId: number, generation: Stamp, ttlMs?: number): void;
  /** A delivery said this account's installations changed (undefined: some account's). */
  dropOwner(ownerId: number | undefined): void;
  /** Taken before a lookup, given back to `add`. */
  readonly generation: Stamp;
  readonly size: number;
  /** How long an answer is kept (when `add` is not told otherwise). */
  readonly ttlMs: number;
}

export function createNotInstalledCache(options: { now: () => number; ttlMs?: number; maxEntries?: number }): NotInstalledCache {
  const ttlMs = options.ttlMs ?? NOT_INSTALLED_TTL_MS;
  /** Key → the owner id of its repository. Full: the oldest answer goes first, so a flood of distinct repositories cannot grow it. */
  const owners = createLoadingCache<number>({ max: options.maxEntries ?? MAX_NOT_INSTALLED, now: options.now });
  return {
    get generation() {
      return owners.stamp();
    },
    get size() {
      return owners.size;
    },
    ttlMs,
    has: (key) => owners.peek(key) !== undefined,
    // `lifetime`: an answer learnt from the shared store keeps only what is left of its own.
    add(key, ownerId, since, lifetime = ttlMs) {
      owners.set(key, ownerId, lifetime, since);
    },
    dropOwner(ownerId) {
      if (ownerId === undefined) owners.clear();
      else owners.invalidateWhere((_key, owner) => owner === ownerId);
    },
  };
}
