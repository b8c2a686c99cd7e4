import type { RequestHandler } from "express";

/**
 * Bytes held by one route's request bodies whose sender nobody has authenticated yet, process-wide.
 * A body takes its bytes as they arrive, whatever length it declares (a declared length is a
 * promise, not memory: taking it up front let idle connections hold a budget they never filled).
 * Everything a body took is given back when it is consumed, refused or aborted.
 */
export interface BodyBudget {
  readonly limit: number;
  /** Bytes taken now. */
  readonly held: number;
  /** Takes `bytes` if they fit: false (and nothing taken) if they would push the total over the limit. */
  take(bytes: number): boolean;
  give(bytes: number): void;
}

export function createBodyBudget(limit: number): BodyBudget {
  let held = 0;
  return {
    limit,
    get held() {
      return held;
    },
    take(bytes) {
      if (held + bytes > limit) return false;
      held += bytes;
      return true;
    },
    give(bytes) {
      held = Math.max(0, held - bytes);
    },
  };
}

/** What a body reader needs to know about this request (set by `bodyRules`, read by json-body.ts). */
export interface BodyRules {
  /** This route's bodies not yet authenticated count against it. */
  budget: BodyBudget;
  /** The body must have arrived by then (epoch ms, on `now`). */
  readDeadlineAt: number;
  now: () => number;
}

/** Puts the request's body rules in `res.locals.bodyRules` (one route's budget); the read deadline runs from now. */
export function bodyRules(options: { budget: BodyBudget; readTimeoutMs: number; now: () => number }): RequestHandler {
  return (_req, res, next) => {
    const rules: BodyRules = { budget: options.budget, readDeadlineAt: options.now() + options.readTimeoutMs, now: options.now };
    res.locals.bodyRules = rules;
    next();
  };
}

/** Marks the caller as authenticated (a bearer check passed): its body no longer counts against the budget. */
export function markAuthenticated(locals: Record<string, unknown>): void {
  locals.authenticated = true;
}
