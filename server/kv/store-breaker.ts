/**
 * A short circuit breaker per store connection: after a failed or timed-out call, the store's
 * calls are skipped (answered with their fallback at once) for `openMs`, so a black-holed Redis
 * costs one request one time bound, not every store call of every request one each
 * (docs/operations.md#redis-outages). The next call after `openMs` tries the store again; its
 * success closes the breaker, its failure opens it for another `openMs`. /readyz's probe always
 * tries (`probe`), so a store that is back is seen within one probe.
 */
export interface StoreBreaker {
  /** Whether a call now should skip the store. */
  skipping(): boolean;
  failed(): void;
  succeeded(): void;
}

/** How long a failed store is skipped: a few seconds, short against a Redis restart's impact on /token. */
const STORE_BREAKER_OPEN_MS = 3_000;

export function createStoreBreaker(options: { openMs?: number; now?: () => number } = {}): StoreBreaker {
  const openMs = options.openMs ?? STORE_BREAKER_OPEN_MS;
  const now = options.now ?? Date.now;
  let openUntil = 0;
  return {
    skipping: () => now() < openUntil,
    failed() {
      openUntil = now() + openMs;
    },
    succeeded() {
      openUntil = 0;
    },
  };
}
