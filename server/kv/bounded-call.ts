import type { StoreBreaker } from "./store-breaker.js";

/**
 * How a store call ended (`tokensmith_store_calls_total{outcome}`): answered; failed at once (a
 * refused or closed connection); waited out its bound; or not sent, its breaker open.
 */
export type StoreCallOutcome = "ok" | "error" | "timeout" | "skipped";

/**
 * One store call bounded by `timeoutMs`, never throwing: a timeout or an error is told to `warn`
 * and answered with `fallback` (the broker then behaves as if the binding were unset). With a
 * `breaker`, a call while it is open answers `fallback` at once (a `probe` call tries anyway), and
 * each outcome is told to it. `count` is told every call's outcome.
 */
export function boundedCall(timeoutMs: number, warn: (op: string, error: unknown) => void, breaker?: StoreBreaker, count?: (outcome: StoreCallOutcome) => void) {
  return async <R>(op: string, fallback: R, run: () => Promise<R>, options: { probe?: boolean } = {}): Promise<R> => {
    if (breaker?.skipping() && !options.probe) {
      count?.("skipped");
      return fallback;
    }
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Error("timeout");
    try {
      const result = await Promise.race([
        run(),
        new Promise<R>((_, reject) => {
          timer = setTimeout(() => reject(timedOut), timeoutMs);
        }),
      ]);
      breaker?.succeeded();
      count?.("ok");
      return result;
    } catch (error) {
      breaker?.failed();
      count?.(error === timedOut ? "timeout" : "error");
      warn(op, error);
      return fallback;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** A warning at most every 5 s: an outage must not flood the log. */
export function throttledWarning(warn: (op: string, error: unknown) => void): (op: string, error: unknown) => void {
  let lastWarned = 0;
  return (op, error) => {
    const now = Date.now();
    if (now - lastWarned < 5000) return;
    lastWarned = now;
    warn(op, error);
  };
}
