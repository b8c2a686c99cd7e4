// One gate per platform (API base) that every platform request passes through (the lean client's
// and Octokit's: lookups, mints, GraphQL, listings, update-branch). It keeps the broker inside
// GitHub's secondary limits (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits):
// at most `limit()` requests in flight (UPSTREAM_MAX_CONCURRENCY, read per request), more wait in
// a bounded queue; and after the platform said "wait" for one kind of call, that kind is not sent
// again until the wait is over.

/** Queue length per allowed request in flight: beyond limit × this, a request is refused at once. */
export const QUEUE_FACTOR = 10;

/** What a refused request is told to wait when the queue is full (seconds). */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 1;

/**
 * A request the gate did not send: answered locally as the platform answers a rate limit (429 with
 * `retry-after`), so retries and error mapping treat it exactly as one.
 */
export interface LocalRefusal {
  refused: true;
  retryAfterSeconds: number;
  why: "queue full" | "rate limited";
}

export interface UpstreamGate {
  /**
   * Wait for a slot (or be refused). Resolves with a release function to call once the answer
   * (body included) is in; rejects with `signal.reason` if the signal aborts while queued.
   */
  enter(kind: string, signal?: AbortSignal): Promise<(() => void) | LocalRefusal>;
  /** Tell the gate what the platform answered to a call of this kind (status and headers). */
  observe(kind: string, status: number, headers: Headers, text: string): void;
  readonly inFlight: number;
  readonly queued: number;
}

export interface GateOptions {
  limit: () => number;
  now: () => number;
}

interface Waiter {
  resolve: (release: () => void) => void;
  reject: (reason: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export function createUpstreamGate(options: GateOptions): UpstreamGate {
  let inFlight = 0;
  const queue: Waiter[] = [];
  /** Kind of call → epoch ms before which it is not sent. */
  const blockedUntil = new Map<string, number>();

  const release = () => {
    inFlight -= 1;
    pump();
  };
  const once = () => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      release();
    };
  };
  const pump = () => {
    while (queue.length > 0 && inFlight < Math.max(1, options.limit())) {
      const waiter = queue.shift()!;
      if (waiter.signal && waiter.onAbort) waiter.signal.removeEventListener("abort", waiter.onAbort);
      inFlight += 1;
      waiter.resolve(once());
    }
  };

  return {
    get inFlight() {
      return inFlight;
    },
    get queued() {
      return queue.length;
    },
    enter(kind, signal) {
      const until = blockedUntil.get(kind);
      if (until !== undefined) {
        const leftMs = until - options.now();
        if (leftMs > 0) return Promise.resolve({ refused: true, retryAfterSeconds: Math.max(1, Math.ceil(leftMs / 1000)), why: "rate limited" });
        blockedUntil.delete(kind);
      }
      if (signal?.aborted) return Promise.reject(signal.reason);
      const limit = Math.max(1, options.limit());
      if (inFlight < limit && queue.length === 0) {
        inFlight += 1;
        return Promise.resolve(once());
      }
      if (queue.length >= limit * QUEUE_FACTOR) {
        return Promise.resolve({ refused: true, retryAfterSeconds: QUEUE_FULL_RETRY_AFTER_SECONDS, why: "queue full" });
      }
      return new Promise((resolve, reject) => {
        const waiter: Waiter = { resolve, reject, signal };
        if (signal) {
          // A waiter whose time runs out leaves the queue and fails like a timeout.
          waiter.onAbort = () => {
            const at = queue.indexOf(waiter);
            if (at >= 0) queue.splice(at, 1);
            reject(signal.reason);
          };
          signal.addEventListener("abort", waiter.onAbort, { once: true });
        }
        queue.push(waiter);
      });
    },
    observe(kind, status, headers, text) {
      const waitMs = platformWaitMs(status, headers, text, options.now());
      if (waitMs === null || waitMs <= 0) return;
      const until = options.now() + waitMs;
      if ((blockedUntil.get(kind) ?? 0) < until) blockedUntil.set(kind, until);
    },
  };
}

/**
 * How long the platform said to stop sending this kind of call, or null: a secondary limit
 * (403/429 with `retry-after`, or a 403/429 whose message says "secondary rate limit", which
 * without `retry-after` means at least a minute), or `x-ratelimit-remaining: 0` on any answer
 * (until `x-ratelimit-reset`, epoch seconds). Pure.
 */
export function platformWaitMs(status: number, headers: Headers, text: string, nowMs: number): number | null {
  if (status === 403 || status === 429) {
    const retryAfter = headers.get("retry-after");
    const seconds = retryAfter === null ? NaN : Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    if (/secondary rate limit/i.test(text)) return 60_000;
  }
  if (headers.get("x-ratelimit-remaining") === "0") {
    const reset = Number(headers.get("x-ratelimit-reset") ?? NaN);
    if (Number.isFinite(reset)) return reset * 1000 - nowMs;
  }
  return null;
}

/** The kind of a platform call, for the rate-limit pause: what GitHub limits separately. */
export function kindOfCall(method: string, url: string): string {
  const query = url.indexOf("?");
  const path = query < 0 ? url : url.slice(0, query);
  const upper = method.toUpperCase();
  if (upper === "POST" && path.endsWith("/access_tokens")) return "mint";
  if (upper === "GET" && (path.endsWith("/installation") || /\/app\/installations\/\d+$/.test(path))) return "lookup";
  if (path.endsWith("/graphql")) return "graphql";
  if (upper === "PUT" && path.endsWith("/update-branch")) return "update-branch";
  return upper === "GET" ? "read" : "write";
}
