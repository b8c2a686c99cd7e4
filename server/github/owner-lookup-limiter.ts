// Uncached installation lookups, limited per repository owner (the OIDC claims'
// `repository_owner_id`, per platform). The not-installed cache makes a replay of one token free,
// but an owner with many repositories (or many new ones) still costs one lookup per repository:
// this keeps any one owner to a share of the App's points budget (a tenth of
// UPSTREAM_POINTS_PER_MINUTE per window) spent on lookups that find nothing, so the rest stays for
// everyone else (docs/security.md, "Replays for repositories without the App cost nothing").
//
// Per owner: the times of its lookups that found nothing (or failed) in the last window, and its
// lookups in flight. Both together never exceed the share: a lookup that would is held until one
// in flight settles — one that finds the App installed frees its place at once, so an installed
// owner's cold burst is only paced, never refused — and refused (with the time until the oldest
// leaves the window) once the share is spent on lookups that found nothing.
// In process; with a shared store the instances also hold one share between them
// (shared-lookup-limiter.ts). A restart starts empty.

/** One owner's part of the App's points budget: a tenth. */
export const OWNER_SHARE = 0.1;
/**
 * One calling repository's part for looking up the other repositories its requests name
 * (`repositories`, server/policy/apply-policies.ts): a fiftieth (18 a minute with GitHub's 900), in a
 * limiter of its own, so that a job naming made-up repositories spends its repository's share, not
 * its owner's installation lookups.
 */
export const TARGET_LOOKUP_SHARE = 0.02;
/** Owners remembered at most; past it, the least recently asked for with nothing in flight go first. */
export const MAX_OWNERS = 10_000;

/** A lookup let through: say how it ended, once. */
export interface LookupSlot {
  /** `foundInstalled`: the App is on the repository (the lookup is not counted against the owner). */
  settle(foundInstalled: boolean): void;
}

export interface LookupRefusal {
  retryAfterSeconds: number;
}

export interface OwnerLookupLimiter {
  /** A slot now, a refusal now, or undefined: the owner's share is taken by lookups in flight (wait for one to settle). */
  tryTake(owner: string): LookupSlot | LookupRefusal | undefined;
  /** `tryTake`, waiting for lookups in flight to settle as long as it must (each is bounded by its request's deadline). */
  take(owner: string): Promise<LookupSlot | LookupRefusal>;
  /** Lookups of this owner that found nothing, in the window now (tests, metrics). */
  used(owner: string): number;
  /** Lookups of this owner in flight now. */
  inFlight(owner: string): number;
}

/** A key's places per window: its part of the budget, at least one. */
export function shareOf(pointsPerWindow: number, part: number): number {
  return Math.max(1, Math.floor(pointsPerWindow * part));
}

interface Owner {
  /** When its lookups that found nothing settled, oldest first. */
  spent: number[];
  inFlight: number;
  /** Callers waiting for a lookup in flight to settle. */
  waiters: Array<() => void>;
}

/** `share`: each key's part of the budget (default OWNER_SHARE); keys are owners, or calling repositories for TARGET_LOOKUP_SHARE. */
export function createOwnerLookupLimiter(options: { now: () => number; windowMs: number; pointsPerWindow: () => number; maxOwners?: number; share?: number }): OwnerLookupLimiter {
  const maxOwners = options.maxOwners ?? MAX_OWNERS;
  const part = options.share ?? OWNER_SHARE;
  /** Map order: least recently asked for first. */
  const owners = new Map<string, Owner>();
  const share = () => shareOf(options.pointsPerWindow(), part);
  const trim = (state: Owner, at: number) => {
    while (state.spent.length > 0 && state.spent[0]! <= at - options.windowMs) state.spent.shift();
  };
  const stateOf = (owner: string): Owner => {
    const state = owners.get(owner) ?? { spent: [], inFlight: 0, waiters: [] };
    owners.delete(owner);
    owners.set(owner, state);
    if (owners.size > maxOwners) {
      for (const [name, old] of owners) {
        if (owners.size <= maxOwners) break;
        if (old.inFlight === 0 && old.waiters.length === 0) owners.delete(name);
      }
    }
    return state;
  };

  const tryTake = (owner: string): LookupSlot | LookupRefusal | undefined => {
    const at = options.now();
    const state = stateOf(owner);
    trim(state, at);
    const limit = share();
    if (state.spent.length >= limit) {
      // A lowered budget can leave more than the share in the window: the wait is until enough have left.
      const freedAt = state.spent[state.spent.length - limit]! + options.windowMs;
      return { retryAfterSeconds: Math.max(1, Math.ceil((freedAt - at) / 1000)) };
    }
    if (state.spent.length + state.inFlight >= limit) return undefined;
    state.inFlight += 1;
    let settled = false;
    return {
      settle(foundInstalled) {
        if (settled) return;
        settled = true;
        state.inFlight -= 1;
        if (!foundInstalled) state.spent.push(options.now());
        // Every waiter looks again: a place may be free, or the share spent (refused now).
        for (const wake of state.waiters.splice(0)) wake();
      },
    };
  };

  return {
    tryTake,
    async take(owner) {
      for (;;) {
        const taken = tryTake(owner);
        if (taken !== undefined) return taken;
        await new Promise<void>((resolve) => stateOf(owner).waiters.push(resolve));
      }
    },
    used(owner) {
      const state = owners.get(owner);
      if (!state) return 0;
      trim(state, options.now());
      return state.spent.length;
    },
    inFlight(owner) {
      return owners.get(owner)?.inFlight ?? 0;
    },
  };
}
