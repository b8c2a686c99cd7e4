import type { BrokerContext } from "../context.js";
import { createPointsPacer, MAX_CALL_POINTS } from "../github/points-pacer.js";

/**
 * The part of the App's REST points budget (UPSTREAM_POINTS_PER_MINUTE, GitHub's 900 a minute)
 * that policy check runs may spend on the App's own calls — installation lookups and mints — per
 * points window: a tenth, like one owner's share of lookups that find nothing. Pull requests are
 * opened and pushed to by anyone who can fork a public repository, so their work must never take
 * the budget every owner's /token lives on (docs/operations.md, "Policy check runs").
 */
const CHECK_RUN_SHARE = 0.1;

/** Points of App calls, spent within the share: a call waits (first in, first out) until its points fit. */
export interface CheckRunShare {
  spend<T>(points: number, call: () => Promise<T>, signal?: AbortSignal): Promise<T>;
}

/** In process: with n instances the check runs of the fleet get at most n shares. */
export function createCheckRunShare(ctx: BrokerContext): CheckRunShare {
  const pacer = createPointsPacer({
    // Read at every decision, timers included: an unreadable environment must not throw there.
    budget: () => {
      try {
        return Math.floor(ctx.settings().upstreamPointsPerMinute * CHECK_RUN_SHARE);
      } catch {
        return MAX_CALL_POINTS;
      }
    },
    now: ctx.now,
    windowMs: ctx.timing.pointsWindowMs,
  });
  return {
    async spend(points, call, signal) {
      const reservation = await pacer.reserve("app", points, signal);
      try {
        return await call();
      } finally {
        // Counted as sent even when it failed before leaving: the share errs on the side of the rest.
        reservation.settle(true);
      }
    },
  };
}
