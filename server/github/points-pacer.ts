// GitHub's points budget (secondary rate limits: no more than 900 REST points a minute per App or
// installation; a GET, HEAD or OPTIONS costs 1 point, any other method 5:
// https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#calculating-points-for-the-secondary-rate-limit),
// kept by the broker before it sends a call instead of learnt from a 403 after it.
//
// A sliding window per principal (the App, or one installation). A call reserves its points
// before it is sent and holds them while it is out; once its answer is in (or it is abandoned) the
// points stay in the window until `windowMs` after that moment, so however late the platform saw
// the call arrive, it has left the platform's window too when the broker's frees. A reservation
// never sent is refunded: only calls actually sent spend points. One principal out of points never
// holds back another.
//
// Fair shares (docs/security.md#fair-shares-of-the-apps-budget): a call may name its tenant (the
// owner and the repository of the /token request it serves). Within a principal, waiters queue per
// tenant and are served round robin across owners, then across an owner's repositories, first in,
// first out within one repository (calls that name none are the broker's own: one more queue,
// first in first out, held to no share). An owner may go past FAIR_SHARE (half) of the budget only
// while no other queue waits and HEADROOM (a tenth) of the budget stays free; a repository the same
// within its owner's widest part (the budget less its tenth); and while others are about (another
// owner with points in the window, another repository of its owner waiting) each takes at most
// SPREAD (a tenth) of its widest part in any tenth of the window, so that what a flood spent frees
// a little at a time, not all at once a window later (alone, a burst goes at once). An owner or repository its share holds back steps
// aside; one whose turn it is but whose points do not fit the budget holds back everyone behind
// it (a cheap call never overtakes a dear one). `admit` decides, before any work starts, whether a
// tenant's request may wait at all (docs/operations.md#fair-shares).
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

/** Whose request a call serves: the claims' owner and repository (ids, per platform: the gate is). */
export interface Tenant {
  owner: string;
  repository: string;
}

/** An owner's part of the budget while another queue waits; a repository's of its owner's part. */
export const FAIR_SHARE = 0.5;
/** The part an owner past its FAIR_SHARE leaves free for the others (a repository: of its owner's part). */
export const HEADROOM = 0.1;
/** An owner (a repository) takes at most this part of its widest part in any tenth of the window: spread, its points free a little at a time. */
export const SPREAD = 0.1;
/** Requests of one repository admitted and not done, past which a request that cannot get points now is refused. */
export const REPOSITORY_QUEUE = 8;
/** The same for one owner, all its repositories together. */
export const OWNER_QUEUE = 16;

/** A tenant's request admitted to wait for points (`admit`): say when it is done, once. */
export interface Admission {
  done(): void;
}

/** A request refused before any work: its tenant's share is spent and its queue full. */
export interface ShareRefusal {
  retryAfterMs: number;
}

export interface PointsPacer {
  /**
   * Waits until `points` fit in the principal's window, and holds them (first in, first out per
   * principal; with a tenant, fairly across tenants: see above). Rejects with `signal.reason` if
   * the signal aborts first (the waiter leaves the queue).
   */
  reserve(principal: string, points: number, signal?: AbortSignal, tenant?: Tenant): Promise<Reservation>;
  /**
   * `reserve` without waiting: the reservation when the points fit now (and nobody of this
   * principal is waiting), undefined when the call would have to wait. Nothing is held then.
   */
  tryReserve(principal: string, points: number, tenant?: Tenant): Reservation | undefined;
  /**
   * The earliest time (epoch ms) at which `points` more could be let through for this principal,
   * behind everyone already waiting who must be served first, as far as the calls already settled
   * tell: a lower bound (the budget read now, nothing new arriving ahead, a tenant's share at its
   * widest). Undefined when calls still out decide it (their points are held until they settle,
   * then stay a window).
   */
  earliestFit(principal: string, points: number, tenant?: Tenant): number | undefined;
  /**
   * Before a tenant's request starts any work: admitted (it may wait for its points, and says when
   * it is done), or refused at once — its repository (or owner) already has REPOSITORY_QUEUE
   * (OWNER_QUEUE) requests admitted and `points` do not fit its share now (the wait: earliestFit's,
   * at least a second).
   */
  admit(principal: string, tenant: Tenant, points: number): Admission | ShareRefusal;
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

/** Points in a window: settled calls (when their answer came in, oldest first) and calls still out. */
interface Usage {
  spent: Array<{ at: number; points: number }>;
  /** Sum of `spent`'s points. */
  spentPoints: number;
  /** Points of reservations not yet settled. */
  held: number;
}

/** One repository's queue (or the broker's own calls'), first in, first out. */
interface Lane {
  usage: Usage;
  queue: Waiter[];
  /** Requests admitted (`admit`) and not done. */
  admitted: number;
}

interface Owner {
  usage: Usage;
  lanes: Map<string, Lane>;
  /** Lanes with waiters, in turn order: the next to be served first. */
  ring: Lane[];
  admitted: number;
  /** The broker's own calls (no tenant): held to no share. */
  exempt: boolean;
}

interface Principal {
  usage: Usage;
  owners: Map<string, Owner>;
  /** Owners with waiters, in turn order. */
  ring: Owner[];
  waiting: number;
}

/** The queue of calls that name no tenant (not an owner id: those are digits). */
const BROKER = "\u0000broker";

const defaultSetTimer: SetTimer = (wake, ms) => {
  const timer = setTimeout(wake, ms);
  return () => clearTimeout(timer);
};

const newUsage = (): Usage => ({ spent: [], spentPoints: 0, held: 0 });

/** FAIR_SHARE of a part (at least one dearest call). */
export function halfOf(cap: number): number {
  return Math.max(MAX_CALL_POINTS, Math.floor(cap * FAIR_SHARE));
}

/** A part less its HEADROOM (a tenth, rounded down: all of a budget under 10 points): an owner's widest part of the budget, a repository's of its owner's. */
export function keptOf(cap: number): number {
  return cap - Math.floor(cap * HEADROOM);
}

/** What a part may take in any tenth of the window (at least one dearest call). */
export function spreadOf(cap: number): number {
  return Math.max(MAX_CALL_POINTS, Math.floor(cap * SPREAD));
}

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
      state = { usage: newUsage(), owners: new Map(), ring: [], waiting: 0 };
      principals.set(name, state);
    }
    return state;
  };
  const laneOf = (state: Principal, tenant: Tenant | undefined): { owner: Owner; lane: Lane } => {
    const ownerKey = tenant ? tenant.owner : BROKER;
    let owner = state.owners.get(ownerKey);
    if (!owner) {
      owner = { usage: newUsage(), lanes: new Map(), ring: [], admitted: 0, exempt: tenant === undefined };
      state.owners.set(ownerKey, owner);
    }
    const laneKey = tenant ? tenant.repository : BROKER;
    let lane = owner.lanes.get(laneKey);
    if (!lane) {
      lane = { usage: newUsage(), queue: [], admitted: 0 };
      owner.lanes.set(laneKey, lane);
    }
    return { owner, lane };
  };
  /** Points in the window at `at`, held ones included; forgets what has left it. */
  const usedAt = (usage: Usage, at: number): number => {
    while (usage.spent.length > 0 && usage.spent[0]!.at <= at - windowMs) usage.spentPoints -= usage.spent.shift()!.points;
    return usage.spentPoints + usage.held;
  };
  const spreadMs = windowMs * SPREAD;
  /** Points in the last tenth of the window at `at`, held ones included. */
  const recentAt = (usage: Usage, at: number): number => {
    let recent = usage.held;
    for (let i = usage.spent.length - 1; i >= 0 && usage.spent[i]!.at > at - spreadMs; i -= 1) recent += usage.spent[i]!.points;
    return recent;
  };
  /** When `need` points in the last tenth of the window fit `cap` (entries leaving it); undefined: held points decide. */
  const recentFitsAt = (usage: Usage, need: number, cap: number, at: number): number | undefined => {
    const first = usage.spent.findIndex((entry) => entry.at > at - spreadMs);
    for (let i = first < 0 ? usage.spent.length : first; i < usage.spent.length; i += 1) {
      need -= usage.spent[i]!.points;
      if (need <= cap) return usage.spent[i]!.at + spreadMs;
    }
    return undefined;
  };
  /**
   * Whether a tenant's shares let `points` through now (null), else when they might (undefined:
   * when held points settle). A part (an owner of the budget, a repository of its owner's widest
   * part) may go past FAIR_SHARE of it only while no other queue of the same level waits and HEADROOM
   * of it stays free; and takes at most SPREAD of its widest in any tenth of the window — an owner
   * while another owner has points in the window or waits, a repository while another of its
   * owner's waits (alone, a burst goes at once). The broker's own calls are held to none.
   */
  const shareBlock = (state: Principal, owner: Owner, lane: Lane, points: number, at: number, limit: number): number | null | undefined => {
    if (owner.exempt) return null;
    const ownerWidest = keptOf(limit);
    const laneWidest = keptOf(ownerWidest);
    const ownerOthers = state.ring.some((other) => other !== owner);
    const laneOthers = owner.ring.some((other) => other !== lane);
    let wait: number | undefined;
    let blocked = false;
    const block = (when: number | undefined) => {
      // The latest time a blocking rule might lift by itself (the rules are all checked again then);
      // a rule only held points decide wakes it when they settle (a settle pumps).
      blocked = true;
      if (when !== undefined && (wait === undefined || when > wait)) wait = when;
    };
    /** `part` past half of `cap` only while no sibling waits and the parent keeps its headroom. */
    const partRule = (part: Usage, cap: number, parent: Usage, parentCap: number, siblingsWait: boolean) => {
      const need = usedAt(part, at) + points;
      if (need <= halfOf(cap)) return;
      const parentNeed = usedAt(parent, at) + points;
      if (!siblingsWait && parentNeed <= keptOf(parentCap)) return;
      const underHalf = fitsAt(part, need, halfOf(cap));
      const underKept = siblingsWait ? undefined : fitsAt(parent, parentNeed, keptOf(parentCap));
      block(underHalf === undefined ? underKept : underKept === undefined ? underHalf : Math.min(underHalf, underKept));
    };
    partRule(owner.usage, limit, state.usage, limit, ownerOthers);
    partRule(lane.usage, ownerWidest, owner.usage, ownerWidest, laneOthers);
    const spreads: Array<readonly [Usage, number, number | undefined]> = [];
    // Spread because others have points in the window (none waits): it also lifts once theirs have left it.
    if (ownerOthers) spreads.push([owner.usage, spreadOf(ownerWidest), undefined]);
    else if (othersActive(state, owner, at)) spreads.push([owner.usage, spreadOf(ownerWidest), othersQuietAt(state, owner, at)]);
    if (laneOthers) spreads.push([lane.usage, spreadOf(laneWidest), undefined]);
    for (const [usage, cap, quietAt] of spreads) {
      const need = recentAt(usage, at) + points;
      if (need <= cap) continue;
      const fits = recentFitsAt(usage, need, cap, at);
      block(fits === undefined ? quietAt : quietAt === undefined ? fits : Math.min(fits, quietAt));
    }
    return blocked ? wait : null;
  };
  /** Whether another owner (or the broker's own calls) has points in the window. */
  const othersActive = (state: Principal, owner: Owner, at: number): boolean => {
    for (const other of state.owners.values()) if (other !== owner && usedAt(other.usage, at) > 0) return true;
    return false;
  };
  /** When the other owners' settled points have all left the window (their held ones settle with a pump). */
  const othersQuietAt = (state: Principal, owner: Owner, at: number): number | undefined => {
    let quietAt: number | undefined;
    for (const other of state.owners.values()) {
      const last = other === owner ? undefined : other.usage.spent[other.usage.spent.length - 1];
      if (last && last.at + windowMs > at && (quietAt === undefined || last.at + windowMs > quietAt)) quietAt = last.at + windowMs;
    }
    return quietAt;
  };
  /** Whether `points` fit now for this lane: the budget, and its owner's and its own shares as they stand. */
  const fits = (state: Principal, owner: Owner, lane: Lane, points: number, at: number, limit: number): boolean =>
    usedAt(state.usage, at) + points <= limit && shareBlock(state, owner, lane, points, at, limit) === null;
  /** Once a window: what has nothing in it, nothing waiting and nothing admitted is forgotten. */
  const sweep = (at: number) => {
    if (at - sweptAt < windowMs) return;
    sweptAt = at;
    for (const [name, state] of principals) {
      for (const [ownerKey, owner] of state.owners) {
        for (const [laneKey, lane] of owner.lanes) {
          if (usedAt(lane.usage, at) === 0 && lane.queue.length === 0 && lane.admitted === 0) owner.lanes.delete(laneKey);
        }
        if (owner.lanes.size === 0 && usedAt(owner.usage, at) === 0) state.owners.delete(ownerKey);
      }
      if (usedAt(state.usage, at) === 0 && state.waiting === 0 && state.owners.size === 0) principals.delete(name);
    }
  };
  const spend = (usage: Usage, at: number, points: number) => {
    const last = usage.spent[usage.spent.length - 1];
    if (last && last.at === at) last.points += points;
    else usage.spent.push({ at, points });
    usage.spentPoints += points;
  };
  const reservationFor = (state: Principal, owner: Owner, lane: Lane, points: number): Reservation => {
    const usages = [state.usage, owner.usage, lane.usage];
    for (const usage of usages) usage.held += points;
    let settled = false;
    return {
      settle(sent) {
        if (settled) return;
        settled = true;
        const at = stampOf(options.now(), sliceMs);
        for (const usage of usages) {
          usage.held -= points;
          if (sent) spend(usage, at, points);
        }
        // A refund frees points at once; a spend frees held points for a wake-up at its window's end.
        pump();
      },
    };
  };
  /** Takes a waiter out of its lane, and the lane and owner out of the turn order when they have no more. */
  const unqueue = (state: Principal, owner: Owner, lane: Lane, waiter: Waiter, served: boolean): boolean => {
    const index = lane.queue.indexOf(waiter);
    if (index < 0) return false;
    lane.queue.splice(index, 1);
    state.waiting -= 1;
    waiting -= 1;
    const laneAt = owner.ring.indexOf(lane);
    // Served: its lane goes to the back of its owner's turn, its owner to the back of the principal's.
    if (laneAt >= 0 && (served || lane.queue.length === 0)) {
      owner.ring.splice(laneAt, 1);
      if (lane.queue.length > 0) owner.ring.push(lane);
    }
    const ownerAt = state.ring.indexOf(owner);
    if (ownerAt >= 0 && (served || owner.ring.length === 0)) {
      state.ring.splice(ownerAt, 1);
      if (owner.ring.length > 0) state.ring.push(owner);
    }
    return true;
  };
  /**
   * Serves one principal's waiters while one fits, in turn: owners round robin, then an owner's
   * repositories; an owner or repository over its share steps aside, one whose points do not fit
   * the budget holds back everyone behind it. `wake`: told when a waiter left waiting might fit.
   */
  const serve = (state: Principal, at: number, limit: number, wake: (when: number | undefined) => void) => {
    next: for (;;) {
      for (const owner of state.ring) {
        for (const lane of owner.ring) {
          const head = lane.queue[0]!;
          const blocked = shareBlock(state, owner, lane, head.points, at, limit);
          if (blocked !== null) {
            // Over its share: it steps aside, and is looked at again when the share might let it through.
            wake(blocked);
            continue;
          }
          const need = usedAt(state.usage, at) + head.points;
          if (need > limit) {
            wake(fitsAt(state.usage, need, limit));
            return;
          }
          unqueue(state, owner, lane, head, true);
          if (head.signal && head.onAbort) head.signal.removeEventListener("abort", head.onAbort);
          head.resolve(reservationFor(state, owner, lane, head.points));
          continue next;
        }
      }
      return;
    }
  };
  /** Serves every waiting principal; then sets the next wake-up. */
  const pump = () => {
    const at = options.now();
    const limit = budget();
    let next: number | undefined;
    const wake = (when: number | undefined) => {
      if (when !== undefined && (next === undefined || when < next)) next = when;
    };
    for (const name of queued) {
      const state = principals.get(name)!;
      serve(state, at, limit, wake);
      if (state.waiting === 0) queued.delete(name);
    }
    schedule(next, at);
    sweep(at);
  };
  /**
   * When `need` points (what is in the window now plus what is asked) fit `limit`, as far as the
   * settled calls tell (entries leaving the window); undefined when held points block it even then
   * (their settling pumps).
   */
  const fitsAt = (usage: Usage, need: number, limit: number): number | undefined => {
    for (const entry of usage.spent) {
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

  const tryReserve = (principal: string, points: number, tenant?: Tenant): Reservation | undefined => {
    const state = stateOf(principal);
    if (state.waiting > 0) return undefined;
    const { owner, lane } = laneOf(state, tenant);
    return fits(state, owner, lane, points, options.now(), budget()) ? reservationFor(state, owner, lane, points) : undefined;
  };
  const earliestFit = (principal: string, points: number, tenant?: Tenant): number | undefined => {
    const at = options.now();
    const state = principals.get(principal);
    if (!state) return at;
    const limit = budget();
    const owner = state.owners.get(tenant ? tenant.owner : BROKER);
    const lane = owner?.lanes.get(tenant ? tenant.repository : BROKER);
    // Only the calls of its own queue are certainly served before it (first in, first out there).
    let ahead = points;
    for (const waiter of lane?.queue ?? []) ahead += waiter.points;
    const fitUnder = (usage: Usage, cap: number): number | undefined => {
      const need = usedAt(usage, at) + ahead;
      return need <= cap ? at : fitsAt(usage, need, cap);
    };
    let fit = fitUnder(state.usage, limit);
    if (fit === undefined || !tenant || !owner || !lane) return fit;
    // Its shares at their widest (no sibling waiting): a lower bound of when they let it through.
    const ownerWidest = keptOf(limit);
    const laneWidest = keptOf(ownerWidest);
    const either = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
    const owned = either(fitUnder(owner.usage, halfOf(limit)), fitUnder(state.usage, ownerWidest));
    const laned = either(fitUnder(lane.usage, halfOf(ownerWidest)), fitUnder(owner.usage, laneWidest));
    if (owned === undefined || laned === undefined) return undefined;
    fit = Math.max(fit, owned, laned);
    // Spread (when it applies): a tenth of the window passes at most its part (the calls ahead included).
    const spreads: Array<readonly [Usage, number]> = [];
    if (state.ring.some((other) => other !== owner) || othersActive(state, owner, at)) spreads.push([owner.usage, spreadOf(ownerWidest)]);
    if (owner.ring.some((other) => other !== lane)) spreads.push([lane.usage, spreadOf(laneWidest)]);
    for (const [usage, cap] of spreads) {
      const need = recentAt(usage, at) + ahead;
      if (need <= cap) continue;
      fit = Math.max(fit, ahead <= cap ? (recentFitsAt(usage, need, cap, at) ?? at) : at + (Math.ceil(ahead / cap) - 1) * spreadMs);
    }
    return fit;
  };

  return {
    get waiting() {
      return waiting;
    },
    earliestFit,
    tryReserve,
    admit(principal, tenant, points) {
      const state = stateOf(principal);
      const { owner, lane } = laneOf(state, tenant);
      const at = options.now();
      if (lane.admitted >= REPOSITORY_QUEUE || owner.admitted >= OWNER_QUEUE) {
        const getsNow = lane.queue.length === 0 && fits(state, owner, lane, points, at, budget());
        if (!getsNow) return { retryAfterMs: Math.max(1000, (earliestFit(principal, points, tenant) ?? at) - at) };
      }
      lane.admitted += 1;
      owner.admitted += 1;
      let done = false;
      return {
        done() {
          if (done) return;
          done = true;
          lane.admitted -= 1;
          owner.admitted -= 1;
        },
      };
    },
    reserve(principal, points, signal, tenant) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const now = tryReserve(principal, points, tenant);
      if (now) return Promise.resolve(now);
      const state = stateOf(principal);
      const { owner, lane } = laneOf(state, tenant);
      return new Promise<Reservation>((resolve, reject) => {
        const waiter: Waiter = { points, resolve, reject, signal };
        if (signal) {
          // A waiter whose time runs out leaves the queue and fails as its caller's signal says.
          waiter.onAbort = () => {
            unqueue(state, owner, lane, waiter, false);
            reject(signal.reason);
            // The one behind it may fit now.
            pump();
          };
          signal.addEventListener("abort", waiter.onAbort, { once: true });
        }
        lane.queue.push(waiter);
        if (lane.queue.length === 1) owner.ring.push(lane);
        if (owner.ring.length === 1 && lane.queue.length === 1) state.ring.push(owner);
        state.waiting += 1;
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
