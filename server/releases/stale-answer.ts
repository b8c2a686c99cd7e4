// Stale-while-revalidate for the /releases aggregate (docs/api.md "GET /releases", "Stale
// answers"): which aggregate a request is answered with, and when a refresh starts. The store, the
// crawl and the platform's budget are the caller's (releases-service.ts); this holds the rules and
// the one refresh in flight per aggregate (the fleet-wide lock, when there is one, is inside the
// caller's refresh), so the model test (test/releases-stale-model.test.ts) can drive it alone.
import { BrokerError } from "../../shared/broker-error.js";
import type { Logger } from "../log.js";

/**
 * How long a request that found a stale aggregate waits for the refresh it started (or joined)
 * before it is answered with the stale one; the refresh goes on in the background. A warm refresh
 * of a few hundred repositories takes well under a second, so a dashboard polling past the TTL
 * usually gets the new list; a slow platform costs it 3 s, not the request's 25 s deadline.
 */
export const RELEASES_STALE_GRACE_MS = 3_000;

/** The last value stored, as the store has it now. */
export interface LastValue<T> {
  value: T;
  /** Within its lifetime. False: past it, within the stale window (beyond it the store has none). */
  fresh: boolean;
  ageMs: number;
}

/** The platform's budget is spent for the refresh's first call: wait this long. */
export interface BudgetWait {
  retryAfterSeconds: number;
  /**
   * The platform itself said to wait (a primary or secondary rate limit): a refresh started now
   * would be refused before it is sent, so none is started. False: the broker's own points budget
   * (UPSTREAM_POINTS_PER_MINUTE) is full; a refresh started now waits for points and then runs.
   */
  paused: boolean;
}

export interface StaleSource<T> {
  /** The last value, fresh or stale; undefined when there is none (or no store). */
  readLast(): Promise<LastValue<T> | undefined>;
  /** Crawls and stores a new value (`cached`: another instance stored it meanwhile). Must not write over the last value with a failure. */
  refresh(): Promise<{ value: T; cached: boolean }>;
  /** The budget's wait when the refresh's first call cannot be sent by `byAt` (epoch ms); undefined when it can. */
  budget(byAt: number): Promise<BudgetWait | undefined>;
  /** Seconds to wait when `error` (a failed refresh) was the platform's rate limit; undefined for any other failure. */
  rateLimitSeconds(error: unknown): number | undefined;
}

export interface StaleAnswer<T> {
  value: T;
  cached: boolean;
  /** Set when the value is past its lifetime: its age. */
  staleAgeMs?: number;
}

interface StaleAnswererOptions {
  now: () => number;
  graceMs: number;
  log: Logger;
  /** Resolves after `ms` (the grace); default a timer, cleared once the refresh wins. */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
}

const timerWait = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

/**
 * Per aggregate key, the rules:
 * - fresh → answered from the store (`cached: true`);
 * - stale (past its lifetime, within the stale window) → the budget spent now → answered stale at
 *   once (a refresh is started unless the platform said to wait; one already running is kept);
 *   otherwise a refresh is started (or joined) and awaited for the grace: its value if it comes,
 *   else the stale one — also when it fails, whatever the failure (the stale entry stays);
 * - none → the budget cannot fit the first call before the request's deadline → 503
 *   `platform_rate_limited` at once with its wait; otherwise the refresh is awaited, and a refresh
 *   failing on a rate limit is the same 503 (any other failure is thrown as it is).
 * At most one refresh per key is in flight in this process; its failure is logged once, here.
 */
export function createStaleAnswerer(options: StaleAnswererOptions) {
  const refreshes = new Map<string, Promise<{ value: unknown; cached: boolean }>>();
  const reads = new Map<string, Promise<LastValue<unknown> | undefined>>();
  const wait = options.wait ?? timerWait;

  const shared = <R>(flights: Map<string, Promise<unknown>>, key: string, start: () => Promise<R>): Promise<R> => {
    let flight = flights.get(key) as Promise<R> | undefined;
    if (!flight) {
      flight = start().finally(() => flights.delete(key));
      flights.set(key, flight);
    }
    return flight;
  };

  const refreshOf = <T>(key: string, source: StaleSource<T>): Promise<{ value: T; cached: boolean }> => {
    const running = refreshes.has(key);
    const flight = shared(refreshes, key, () => source.refresh()) as Promise<{ value: T; cached: boolean }>;
    if (!running) {
      // Its failure is logged once, whoever waits for it (nobody may: a stale answer went out).
      flight.catch((error: unknown) =>
        options.log.warn({ code: error instanceof BrokerError ? error.code : undefined, detail: error instanceof Error ? error.message : String(error) }, "releases crawl failed; nothing stored (a last aggregate, if any, stays)"),
      );
    }
    return flight;
  };

  return {
    async answer<T>(key: string, source: StaleSource<T>, deadlineAt: number): Promise<StaleAnswer<T>> {
      const last = (await shared(reads, key, () => source.readLast())) as LastValue<T> | undefined;
      if (last?.fresh) return { value: last.value, cached: true };
      if (last) {
        const stale = (): StaleAnswer<T> => ({ value: last.value, cached: true, staleAgeMs: last.ageMs });
        const spent = await source.budget(options.now());
        if (spent) {
          if (!spent.paused) void refreshOf(key, source).catch(() => undefined);
          return stale();
        }
        const refreshed = refreshOf(key, source);
        const controller = new AbortController();
        try {
          const first = await Promise.race([
            refreshed.then((fresh) => ({ fresh }), () => null),
            wait(options.graceMs, controller.signal).then(() => null),
          ]);
          return first ? { value: first.fresh.value, cached: first.fresh.cached } : stale();
        } finally {
          controller.abort();
        }
      }
      const spent = await source.budget(deadlineAt);
      if (spent) throw rateLimited(spent.retryAfterSeconds);
      try {
        const fresh = await refreshOf(key, source);
        return { value: fresh.value, cached: fresh.cached };
      } catch (error) {
        const seconds = source.rateLimitSeconds(error);
        if (seconds !== undefined) throw rateLimited(seconds, error);
        throw error;
      }
    },
  };
}


function rateLimited(retryAfterSeconds: number, cause?: unknown): BrokerError {
  return new BrokerError("platform_rate_limited", { retryAfter: Math.max(1, retryAfterSeconds), cause, detail: `platform budget spent for ${retryAfterSeconds} s and no aggregate stored` });
}
