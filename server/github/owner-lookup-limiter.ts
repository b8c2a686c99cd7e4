// Uncached installation lookups, limited per repository owner (the OIDC claims'
// `repository_owner_id`, per platform). The not-installed cache makes a replay of one token free,
// but an owner with many repositories (or many new ones) still costs one lookup per repository:
// this keeps any one owner to a share of the App's points budget (a tenth of
// UPSTREAM_POINTS_PER_MINUTE per window), so the rest stays for everyone else
// (docs/security.md, "Replays for repositories without the App cost nothing").
//
// A sliding window per owner: the times of its lookups in the last window (at most `share` of
// them). In process only: with n instances an owner gets at most n shares; a restart starts empty.

/** One owner's part of the App's points budget: a tenth. */
export const OWNER_SHARE = 0.1;
/** Owners remembered at most (each at most `share` times); past it, the least recently asked for go first. */
export const MAX_OWNERS = 10_000;

export interface OwnerLookupLimiter {
  /**
   * A lookup for this owner is about to go out: allowed (and counted) when the owner has made
   * fewer than its share in the last window; else the seconds until one of its lookups leaves it.
   */
  take(owner: string): { allowed: true } | { allowed: false; retryAfterSeconds: number };
  /** Lookups of this owner in the window now (tests, metrics). */
  used(owner: string): number;
}

export function createOwnerLookupLimiter(options: { now: () => number; windowMs: number; pointsPerWindow: () => number; maxOwners?: number }): OwnerLookupLimiter {
  const maxOwners = options.maxOwners ?? MAX_OWNERS;
  /** Owner → times of its lookups in the window, oldest first. Map order: least recently used first. */
  const owners = new Map<string, number[]>();
  const share = () => Math.max(1, Math.floor(options.pointsPerWindow() * OWNER_SHARE));
  const inWindow = (owner: string, at: number): number[] => {
    const times = owners.get(owner) ?? [];
    while (times.length > 0 && times[0]! <= at - options.windowMs) times.shift();
    return times;
  };

  return {
    take(owner) {
      const at = options.now();
      const times = inWindow(owner, at);
      const limit = share();
      // Most recently asked for last: an owner held at its share is not the first forgotten.
      owners.delete(owner);
      owners.set(owner, times);
      if (owners.size > maxOwners) owners.delete(owners.keys().next().value as string);
      if (times.length >= limit) {
        // A lowered budget can leave more than the share in the window: the wait is until enough have left.
        const freedAt = times[times.length - limit]! + options.windowMs;
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((freedAt - at) / 1000)) };
      }
      times.push(at);
      return { allowed: true };
    },
    used(owner) {
      return inWindow(owner, options.now()).length;
    },
  };
}
