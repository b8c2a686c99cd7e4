// GitHub's points budget (secondary rate limits: no more than 900 REST points a minute per App or
// installation; a GET, HEAD or OPTIONS costs 1 point, any other method 5:
// https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#calculating-points-for-the-secondary-rate-limit),
// kept by the broker before it sends a call instead of learnt from a 403 after it.
//
// A sliding window per principal (the App, or one installation). A call reserves its points
// before it is sent and holds them while it is out; once its answer is in (or it is abandoned) the
// points stay in the window until `windowMs` after that moment, so however late the platform saw
// the call arrive, it has left the platform's window too when the broker's frees. A reservation
// never sent is refunded: only calls actually sent spend points. Waiters are served first in,
// first out per principal (a cheap call never overtakes a dear one of the same principal); one
// principal out of points never holds back another.
// Kept for correctness: @octokit/plugin-throttling keeps no points before a call is sent (see
// upstream-gate.ts; test/releases-points.test.ts, test/points-pacer-model.test.ts).

/** GitHub's value (per App, and per installation). */
export const GITHUB_POINTS_PER_MINUTE = 900;
/** The dearest call (any method other than GET, HEAD, OPTIONS): the least budget that lets every call through. */
export const MAX_CALL_POINTS = 5;
export const POINTS_WINDOW_MS = 60_000;

/** A wake-up after `ms`; returns a function that cancels it. */
export type SetTimer = (wake: () => void, ms: number) => () => void;

export interface PointsPacerOptions {
  /** Points per principal per window, read at every decision (UPSTREAM_POINTS_PER_MINUTE). At least MAX_CALL_POINTS is used. */
  budget: () => number;
  now: () => number;
  /** Default POINTS_WINDOW_MS (GitHub's minute); tests scale it down on both sides. */
  windowMs?: number;
  /** Default: a timer. The model test drives time itself. */
  setTimer?: SetTimer;
}

/**
 * Answers are stamped at the end of their slice of the window (1/600 of it: 100 ms of GitHub's
 * minute), so a principal's window holds at most 600 entries however many calls it sends; a call's
 * points stay at most one slice longer than they must, never shorter.
 */
export const SLICES_PER_WINDOW = 600;

/** Points held for one call: `settle(true)` once it was sent and is done, `settle(false)` if it never went out. */
export interface Reservation {
  settle(sent: boolean): void;
}

export interface PointsPacer {
  /**
   * Waits (FIFO per principal) until `points` fit in the principal's window, and holds them.
   * Rejects with `signal.reason` if the signal aborts first (the waiter leaves the queue).
   */
  reserve(principal: string, points: number, signal?: AbortSignal): Promise<Reservation>;
  /**
   * `reserve` without waiting: the reservation when the points fit now (and nobody of this
   * principal is waiting), undefined when the call would have to wait. Nothing is held then.
   */
  tryReserve(principal: string, points: number): Reservation | undefined;
  /**
   * The earliest time (epoch ms) at which `points` more could be let through for this principal,
   * behind everyone already waiting, as far as the calls already settled tell: a lower bound (the
   * budget read now, nothing new arriving ahead). Undefined when calls still out decide it (their
   * points are held until they settle, then stay a window).
   */
  earliestFit(principal: string, points: number): number | undefined;
  /** Calls waiting for points, every principal. */
  readonly waiting: number;
}

interface Waiter {
  points: number;
  resolve: (reservation: Reservation) => void;
  reject: (reason: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

interface Principal {
  /** Settled calls still in the window: when their answer came in, and their points. Oldest first. */
  spent: Array<{ at: number; points: number }>;
  /** Sum of `spent`'s points. */
  spentPoints: number;
  /** Points of reservations not yet settled. */
  held: number;
  queue: Waiter[];
}

const defaultSetTimer: SetTimer = (wake, ms) => {
  const timer = setTimeout(wake, ms);
  return () => clearTimeout(timer);
};

export function createPointsPacer(options: PointsPacerOptions): PointsPacer {
  const windowMs = options.windowMs ?? POINTS_WINDOW_MS;
  const sliceMs = windowMs / SLICES_PER_WINDOW;
  const setTimer = options.setTimer ?? defaultSetTimer;
  const principals = new Map<string, Principal>();
  /** Principals with calls waiting: the only ones a pump looks at. */
  const queued = new Set<string>();
  let waiting = 0;
  let wakeAt: number | undefined;
  let cancelWake: (() => void) | undefined;
  let sweptAt = options.now();

  const budget = () => Math.max(MAX_CALL_POINTS, options.budget());
  const stateOf = (name: string): Principal => {
    let state = principals.get(name);
    if (!state) {
      state = { spent: [], spentPoints: 0, held: 0, queue: [] };
      principals.set(name, state);
    }
    return state;
  };
  /** Points in the window at `at`, held ones included; forgets what has left it. */
  const usedAt = (state: Principal, at: number): number => {
    while (state.spent.length > 0 && state.spent[0]!.at <= at - windowMs) state.spentPoints -= state.spent.shift()!.points;
    return state.spentPoints + state.held;
  };
  /** Once a window: principals with nothing in it and nothing waiting are forgotten. */
  const sweep = (at: number) => {
    if (at - sweptAt < windowMs) return;
    sweptAt = at;
    for (const [name, state] of principals) {
      if (usedAt(state, at) === 0 && state.queue.length === 0) principals.delete(name);
    }
  };
  const reservationFor = (state: Principal, points: number): Reservation => {
    state.held += points;
    let settled = false;
    return {
      settle(sent) {
        if (settled) return;
        settled = true;
        state.held -= points;
        if (sent) {
          const at = stampOf(options.now(), sliceMs);
          const last = state.spent[state.spent.length - 1];
          if (last && last.at === at) last.points += points;
          else state.spent.push({ at, points });
          state.spentPoints += points;
        }
        // A refund frees points at once; a spend frees held points for a wake-up at its window's end.
        pump();
      },
    };
  };
  /** Serves every waiting principal's queue from its head while the head fits; then sets the next wake-up. */
  const pump = () => {
    const at = options.now();
    const limit = budget();
    let next: number | undefined;
    for (const name of queued) {
      const state = principals.get(name)!;
      while (state.queue.length > 0) {
        const head = state.queue[0]!;
        const need = usedAt(state, at) + head.points;
        if (need > limit) {
          const freeAt = fitsAt(state, need, limit);
          if (freeAt !== undefined && (next === undefined || freeAt < next)) next = freeAt;
          break;
        }
        state.queue.shift();
        waiting -= 1;
        if (head.signal && head.onAbort) head.signal.removeEventListener("abort", head.onAbort);
        head.resolve(reservationFor(state, head.points));
      }
      if (state.queue.length === 0) queued.delete(name);
    }
    schedule(next, at);
    sweep(at);
  };
  /**
   * When `need` points (what is in the window now plus what is asked) fit `limit`, as far as the
   * settled calls tell (entries leaving the window); undefined when held points block it even then
   * (their settling pumps).
   */
  const fitsAt = (state: Principal, need: number, limit: number): number | undefined => {
    for (const entry of state.spent) {
      need -= entry.points;
      if (need <= limit) return entry.at + windowMs;
    }
    return undefined;
  };
  const schedule = (next: number | undefined, at: number) => {
    if (next === wakeAt) return;
    cancelWake?.();
    cancelWake = undefined;
    wakeAt = next;
    if (next === undefined) return;
    cancelWake = setTimer(() => {
      cancelWake = undefined;
      wakeAt = undefined;
      pump();
    }, Math.max(0, next - at));
  };

  const tryReserve = (principal: string, points: number): Reservation | undefined => {
    const state = stateOf(principal);
    return state.queue.length === 0 && usedAt(state, options.now()) + points <= budget() ? reservationFor(state, points) : undefined;
  };

  return {
    get waiting() {
      return waiting;
    },
    earliestFit(principal, points) {
      const at = options.now();
      const state = principals.get(principal);
      if (!state) return at;
      const limit = budget();
      let need = usedAt(state, at) + points;
      for (const waiter of state.queue) need += waiter.points;
      return need <= limit ? at : fitsAt(state, need, limit);
    },
    tryReserve,
    reserve(principal, points, signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const now = tryReserve(principal, points);
      if (now) return Promise.resolve(now);
      const state = stateOf(principal);
      return new Promise<Reservation>((resolve, reject) => {
        const waiter: Waiter = { points, resolve, reject, signal };
        if (signal) {
          // A waiter whose time runs out leaves the queue and fails as its caller's signal says.
          waiter.onAbort = () => {
            const at = state.queue.indexOf(waiter);
            if (at >= 0) {
              state.queue.splice(at, 1);
              waiting -= 1;
            }
            reject(signal.reason);
            // The one behind it may fit now.
            pump();
          };
          signal.addEventListener("abort", waiter.onAbort, { once: true });
        }
        state.queue.push(waiter);
        queued.add(principal);
        waiting += 1;
        pump();
      });
    },
  };
}

/** When an answer at `now` is counted from: the end of its slice (never earlier than `now`). */
export function stampOf(now: number, sliceMs: number): number {
  return Math.ceil(now / sliceMs) * sliceMs;
}
