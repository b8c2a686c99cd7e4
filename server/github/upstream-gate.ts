// One gate per platform (API base) that every platform request passes through (the lean client's
// and Octokit's: lookups, mints, GraphQL, listings, update-branch). It keeps the broker inside
// GitHub's secondary limits (https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits):
// - REST points per App and per installation (UPSTREAM_POINTS_PER_MINUTE, read per request; see
//   points-pacer.ts): a call waits until its points fit in its principal's window — the App's
//   calls for a /token request queue fairly by its owner and repository, each held to a share
//   while others wait (asTenant, admit), the others first in first out; GraphQL is a budget of its own (2,000 points a minute) and spends none of these;
// - at most `limit()` requests in flight (UPSTREAM_MAX_CONCURRENCY, read per request), more wait
//   in a bounded queue;
// - after the platform said "wait", the calls it concerns are not sent until the wait is over:
//   a primary limit (`x-ratelimit-remaining: 0`, until `x-ratelimit-reset`) is one principal's —
//   the App JWT's, or one installation's — for REST or for GraphQL (each has its own), so it pauses
//   only that principal's calls of that API; a secondary limit (`retry-after`, or GitHub's
//   "secondary rate limit" message) is the App's, so it pauses every call of that App, its JWT and
//   its installations alike (docs/security.md, "One installation's rate limit pauses only that
//   installation").
//
// Kept for correctness, not speed (issue 28; docs/operations.md, "Fast paths"). @octokit/plugin-throttling
// 11.0.5 + plugin-retry 8.1.1 do not cover, each case proved by the test named:
// - points kept before a call is sent; the plugins only react to a 403/429 once it has come
//   (test/releases-points.test.ts: a crawl over a window's points, "the platform refuses nothing");
// - a primary limit pausing its principal only, a secondary one the whole App; the plugins retry
//   the refused call alone (test/hardening-principal-limits.test.ts and its model test);
// - refusing at once, with Retry-After, what cannot get points or a slot before the request's
//   deadline; the plugins sleep out the wait (test/token-limits.test.ts, "points that cannot come
//   before the deadline", "beyond the bounded queue").
// Their defaults would also cost speed: one mint in flight per App (their "auth" group), 28.8
// mints/s against 82 to 111 without them on a 40 ms link; GraphQL at one query a second (their
// "write" group), a crawl's 20 queries in 19.2 s against 0.88 s.
import { AsyncLocalStorage } from "node:async_hooks";
import { hash } from "node:crypto";
import type { SharedLimits } from "../kv/shared-limits.js";
import { createPrincipalRegistry, pointsOf, type PrincipalRegistry } from "./call-principal.js";
import { createPointsPacer, GITHUB_POINTS_PER_MINUTE, MAX_CALL_POINTS, POINTS_WINDOW_MS, type Admission, type Reservation, type SetTimer, type ShareRefusal, type Tenant } from "./points-pacer.js";

/**
 * The tenant whose request the App's calls made inside `run` serve (docs/security.md#fair-shares-of-the-apps-budget):
 * its installation lookup, policy reads' reader mint and mint queue fairly by it. Calls made
 * outside (the broker's own: webhooks, crawls, /sign) name none.
 */
const tenantScope = new AsyncLocalStorage<Tenant>();
export function asTenant<T>(tenant: Tenant, run: () => Promise<T>): Promise<T> {
  return tenantScope.run(tenant, run);
}

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
  why: "queue full" | "rate limited" | "points";
}

/** Why the gate refused a call, or `admit` a request (tokensmith_upstream_refused_total's `reason`). */
export type RefusalReason = LocalRefusal["why"] | "share";

/** A platform call as the gate sees it. */
export interface GatedCall {
  /** What it is (kindOfCall): GraphQL's limits are its own, every other kind is REST's. */
  kind: string;
  /** Whose REST points it spends (the App, an installation); null: none. */
  principal: string | null;
  /** REST points (0 for GraphQL and unauthenticated calls). */
  points: number;
  /** Whose primary rate limit it counts against (the App JWT's, an installation's, GraphQL included); null: unauthenticated. */
  caller: string | null;
  /** Whose secondary limits it counts against: the caller's App. */
  app: string | null;
  /** The tenant an App call serves (asTenant), queued fairly by; undefined: the broker's own. */
  tenant?: Tenant;
}

export interface UpstreamGate {
  /** Kind, principal and points of a call about to be made, and whose rate limits it counts against (caller, App). */
  describe(method: string, url: string, authorization: string | undefined): GatedCall;
  /** A refusal when this call is paused by a "wait" the platform gave its caller (primary) or its App (secondary); null otherwise. */
  paused(call: GatedCall): LocalRefusal | null;
  /**
   * Waits until the call's points fit its principal's budget and holds them (fairly by tenant, else FIFO per principal);
   * null when it spends none. Rejects with `signal.reason` if the signal aborts while waiting. The
   * caller settles the reservation: sent (once answered or abandoned), or refunded if never sent.
   * With `deadlineAt` (epoch ms): refused at once, as `pointsTooLate` refuses, when the shared window
   * (GateOptions.sharedPoints) has no room for the call until after it; never waited for.
   */
  pace(call: GatedCall, signal?: AbortSignal, deadlineAt?: number): Promise<Reservation | LocalRefusal | null>;
  /** `pace` without waiting: the reservation (null: spends none) when the points fit now; undefined when the call must wait for them. */
  tryPace(call: GatedCall): Reservation | null | undefined;
  /**
   * For a call that must wait for points: a refusal when its points cannot fit before `deadlineAt`
   * (epoch ms), whoever is served first (the earliest they could, PointsPacer.earliestFit, is
   * later), with the time until then; null when they may.
   */
  pointsTooLate(call: GatedCall, deadlineAt: number): LocalRefusal | null;
  /**
   * Wait for a slot (or be refused). Resolves with a release function to call once the answer
   * (body included) is in; rejects with `signal.reason` if the signal aborts while queued.
   */
  enter(call: GatedCall, signal?: AbortSignal): Promise<(() => void) | LocalRefusal>;
  /** `enter` without waiting: the release function or a refusal when either is known now; undefined when the call must queue for a slot. */
  tryEnter(call: GatedCall): (() => void) | LocalRefusal | undefined;
  /** Tell the gate what the platform answered to this call (status, headers, body), for its pauses. */
  observe(call: GatedCall, status: number, headers: Headers, text: string): void;
  /**
   * Before a tenant's request starts its platform calls on the App's budget (`app`: `app:<id>`):
   * admitted to wait for points, or refused at once (its share spent and its queue full;
   * PointsPacer.admit). Counted in `refusals` as `share`.
   */
  admit(app: string, tenant: Tenant): Admission | ShareRefusal;
  /** Calls (and requests) refused so far, by reason: counters for tokensmith_upstream_refused_total. */
  readonly refusals: Readonly<Record<RefusalReason, number>>;
  readonly queued: number;
  /** Calls waiting for points. */
  readonly pacing: number;
  readonly principals: PrincipalRegistry;
}

export interface GateOptions {
  limit: () => number;
  now: () => number;
  /** REST points per principal per window (UPSTREAM_POINTS_PER_MINUTE). Default: GitHub's 900. */
  pointsPerMinute?: () => number;
  /** The points window (GitHub's minute; tests scale it down on both sides). */
  pointsWindowMs?: number;
  setTimer?: SetTimer;
  /**
   * The store the instances share their points windows in (server/kv/shared-limits.ts), read per
   * call; null: this instance's window only. With one, a call holds its points in this instance's
   * pacer (its queue and fair shares) and then in the shared window; refused there, it gives the
   * local points back and waits until the shared window has room, or, when that is after the
   * request's deadline, is refused at once (docs/operations.md#shared-limits). The store not
   * answering: this instance's window only.
   */
  sharedPoints?: () => SharedLimits | null;
  /** The platform's API base: its principals' shared windows are its own. */
  apiBase?: string;
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
  const principals = createPrincipalRegistry(options.now);
  const pauses = createPauses(options.now);
  const pointsBudget = options.pointsPerMinute ?? (() => GITHUB_POINTS_PER_MINUTE);
  // A principal's shared window, per platform (the API base hashed: a key carries no URL).
  const platformKey = hash("sha256", options.apiBase ?? "", "base64url").slice(0, 16);
  const sharedKey = (principal: string) => `${platformKey}:${principal}`;
  const windowMs = options.pointsWindowMs ?? POINTS_WINDOW_MS;
  const points = createPointsPacer({
    budget: pointsBudget,
    now: options.now,
    windowMs: options.pointsWindowMs,
    setTimer: options.setTimer,
  });
  const refusals: Record<RefusalReason, number> = { "queue full": 0, "rate limited": 0, points: 0, share: 0 };
  const refused = <R extends LocalRefusal>(refusal: R): R => {
    refusals[refusal.why] += 1;
    return refusal;
  };
  const paused = (call: GatedCall): LocalRefusal | null => {
    const leftMs = pauses.leftMs(call);
    return leftMs > 0 ? refused({ refused: true, retryAfterSeconds: Math.max(1, Math.ceil(leftMs / 1000)), why: "rate limited" }) : null;
  };

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

  const tryEnter = (call: GatedCall): (() => void) | LocalRefusal | undefined => {
    const refusal = paused(call);
    if (refusal) return refusal;
    const limit = Math.max(1, options.limit());
    if (inFlight < limit && queue.length === 0) {
      inFlight += 1;
      return once();
    }
    if (queue.length >= limit * QUEUE_FACTOR) return refused({ refused: true, retryAfterSeconds: QUEUE_FULL_RETRY_AFTER_SECONDS, why: "queue full" });
    return undefined;
  };

  return {
    get queued() {
      return queue.length;
    },
    get pacing() {
      return points.waiting;
    },
    principals,
    refusals,
    describe(method, url, authorization) {
      const kind = kindOfCall(method, url);
      const caller = principals.principalOf(authorization);
      // GraphQL's points are a budget of their own (2,000 a minute, a query 1, a mutation 5), not REST's.
      const principal = kind === "graphql" ? null : caller;
      const call: GatedCall = { kind, principal, points: principal === null ? 0 : pointsOf(method), caller, app: caller === null ? null : principals.appOf(caller) };
      // Only the App's own budget is shared by every tenant; an installation's is its owner's alone.
      const tenant = principal?.startsWith("app:") ? tenantScope.getStore() : undefined;
      if (tenant) call.tenant = tenant;
      return call;
    },
    admit(app, tenant) {
      const answer = points.admit(app, tenant, MAX_CALL_POINTS);
      if ("retryAfterMs" in answer) refusals.share += 1;
      return answer;
    },
    paused,
    async pace(call, signal, deadlineAt) {
      if (call.principal === null || call.points === 0) return null;
      for (;;) {
        const local = await points.reserve(call.principal, call.points, signal, call.tenant);
        const shared = options.sharedPoints?.() ?? null;
        if (!shared) return local;
        const at = options.now();
        const taken = await shared.takePoints(sharedKey(call.principal), call.points, Math.max(MAX_CALL_POINTS, pointsBudget()), windowMs, at);
        if (taken === "unavailable") return local;
        if ("settle" in taken) {
          return {
            settle(sent) {
              local.settle(sent);
              void taken.settle(sent, options.now());
            },
          };
        }
        // Another instance spent the window: this one's points back, then wait for the shared window,
        // unless it has no room before the deadline: then refused now, as pointsTooLate refuses
        // what this instance's window cannot fit in time (the route's code, the wait as Retry-After).
        local.settle(false);
        const fitAt = at + taken.retryAfterMs;
        if (deadlineAt !== undefined && fitAt > deadlineAt) {
          return refused({ refused: true, retryAfterSeconds: Math.max(1, Math.ceil((fitAt - options.now()) / 1000)), why: "points" });
        }
        await sleepUnless(taken.retryAfterMs, signal);
      }
    },
    tryPace(call) {
      if (call.principal === null || call.points === 0) return null;
      // With a shared window the points are taken there too, which takes a round trip: `pace`.
      if (options.sharedPoints?.()) return undefined;
      return points.tryReserve(call.principal, call.points, call.tenant);
    },
    tryEnter,
    pointsTooLate(call, deadlineAt) {
      if (call.principal === null || call.points === 0) return null;
      const fitAt = points.earliestFit(call.principal, call.points, call.tenant);
      if (fitAt === undefined || fitAt <= deadlineAt) return null;
      return refused({ refused: true, retryAfterSeconds: Math.max(1, Math.ceil((fitAt - options.now()) / 1000)), why: "points" });
    },
    enter(call, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const entered = tryEnter(call); // a pause's refusal included
      if (entered !== undefined) return Promise.resolve(entered);
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
    observe(call, status, headers, text) {
      const wait = platformWait(status, (name) => headers.get(name), text, options.now());
      if (wait === null || wait.waitMs <= 0) return;
      pauses.pause(call, wait, headers.get("x-ratelimit-resource"));
    },
  };
}

/** A "wait" the platform gave: a secondary limit's (the App's) or a primary limit's (the caller's). */
export interface PlatformWait {
  limit: "secondary" | "primary";
  waitMs: number;
}

/**
 * What the platform said to wait for, or null: a secondary limit (403/429 with `retry-after`, or a
 * 403/429 whose message says "secondary rate limit", which without `retry-after` means at least a
 * minute), or a primary one: `x-ratelimit-remaining: 0` on any answer (until `x-ratelimit-reset`,
 * epoch seconds). Pure; the one reading of these answers (transient-failure.ts reads it too).
 */
export function platformWait(status: number, header: (name: string) => string | null | undefined, text: string, nowMs: number): PlatformWait | null {
  if (status === 403 || status === 429) {
    const seconds = Number(header("retry-after") ?? NaN);
    if (Number.isFinite(seconds) && seconds >= 0) return { limit: "secondary", waitMs: seconds * 1000 };
    // GitHub: a rate limit that names no wait means "wait at least one minute" (best practices:
    // https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately).
    if (/secondary rate limit/i.test(text)) return { limit: "secondary", waitMs: 60_000 };
  }
  if (header("x-ratelimit-remaining") === "0") {
    const reset = Number(header("x-ratelimit-reset") ?? NaN);
    if (Number.isFinite(reset)) return { limit: "primary", waitMs: reset * 1000 - nowMs };
  }
  return null;
}

/** The rate-limit resource a call counts against (GitHub's `x-ratelimit-resource`): GraphQL's, or REST's `core`. */
export function resourceOf(call: GatedCall): string {
  return call.kind === "graphql" ? "graphql" : "core";
}

/** Pauses kept at most; past it, expired ones go, then the longest set (only thousands of installations could fill it). */
const MAX_PAUSES = 10_000;

/**
 * The platform's "waits" in force: primary ones per caller and resource, secondary ones per App.
 * A call is held for the longest of its caller's (for its resource) and its App's.
 */
function createPauses(now: () => number) {
  /** `caller \0 resource` (primary) or `secondary \0 app` → epoch ms before which no call of theirs is sent. */
  const until = new Map<string, number>();
  const primaryKey = (caller: string | null, resource: string) => `${caller ?? "anonymous"}\u0000${resource}`;
  const secondaryKey = (call: GatedCall) => `secondary\u0000${call.app ?? call.caller ?? "anonymous"}`;
  const left = (key: string, at: number): number => {
    const end = until.get(key);
    if (end === undefined) return 0;
    if (end > at) return end - at;
    until.delete(key);
    return 0;
  };
  return {
    leftMs(call: GatedCall): number {
      if (until.size === 0) return 0;
      const at = now();
      const primary = left(primaryKey(call.caller, resourceOf(call)), at);
      return Math.max(primary, left(secondaryKey(call), at));
    },
    /** `resource`: the answer's `x-ratelimit-resource`, when it names one. */
    pause(call: GatedCall, wait: PlatformWait, resource: string | null): void {
      const at = now();
      const key = wait.limit === "secondary" ? secondaryKey(call) : primaryKey(call.caller, resource ?? resourceOf(call));
      const end = at + wait.waitMs;
      if ((until.get(key) ?? 0) >= end) return;
      until.delete(key);
      if (until.size >= MAX_PAUSES) for (const [old, oldEnd] of until) if (oldEnd <= at || until.size >= MAX_PAUSES) until.delete(old);
      until.set(key, end);
    },
  };
}

/** The kind of a platform call: GraphQL's limits and points are its own; the others are REST's. */
export function kindOfCall(method: string, url: string): string {
  const path = pathOf(url);
  const upper = method.toUpperCase();
  if (upper === "POST" && path.endsWith("/access_tokens")) return "mint";
  if (upper === "GET" && (path.endsWith("/installation") || /\/app\/installations\/\d+$/.test(path))) return "lookup";
  if (path.endsWith("/graphql")) return "graphql";
  if (upper === "PUT" && path.endsWith("/update-branch")) return "update-branch";
  return upper === "GET" ? "read" : "write";
}

/** The URL without its query (an absolute URL keeps its origin: callers only look at the end). */
function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

/** Resolves after `ms`, or rejects with `signal.reason` as soon as it aborts. */
function sleepUnless(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
