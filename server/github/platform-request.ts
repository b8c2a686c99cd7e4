import { request as octokitRequest } from "@octokit/request";
import { RequestError } from "@octokit/request-error";
import { authorizationOf } from "./call-principal.js";
import type { Reservation } from "./points-pacer.js";
import type { JsonRead, StreamedJson } from "./streamed-json.js";
import type { LocalRefusal, UpstreamGate } from "./upstream-gate.js";

export type OctokitRequest = typeof octokitRequest;

interface PlatformRequestOptions {
  apiBase: string;
  fetch: typeof fetch;
  /** Per attempt. */
  timeoutMs: number;
  /** The platform's concurrency cap and rate-limit pause; absent: ungated (the OIDC issuer's fetches). */
  gate?: UpstreamGate;
}

export const API_VERSION = "2022-11-28";

/**
 * Thrown (as the cause of Octokit's RequestError, or of the lean client's) when an upstream
 * answers a redirect. No platform or issuer call follows one, to another origin or the same:
 * a body or Authorization header must never go anywhere but the URL the broker chose, and the
 * platform's API answers what the broker asks without redirecting (docs/design.md#decisions-where-the-contract-was-open).
 * Never retried: the same request would be redirected again.
 */
class RedirectRefusedError extends Error {
  /** The redirect's status; null when fetch itself refused it (a request with a body, see fetchText). */
  constructor(readonly status: number | null) {
    super(`upstream answered a redirect${status === null ? "" : ` (HTTP ${status})`}: not followed`);
    this.name = "RedirectRefusedError";
  }
}

/**
 * One fetch that gives up after `timeoutMs`, the body included: the body is read as text under the
 * timer, which is then cleared. (`AbortSignal.timeout()` would keep every request and response
 * reachable, through undici's abort listener, until it fired many seconds later.) Every upstream
 * call goes through here, so this is where redirects are refused, whatever the caller asked for:
 * `redirect: "manual"` hands the 3xx back unfollowed and it becomes a RedirectRefusedError.
 *
 * With a gate: a paused kind of call is refused at once; then the call takes its REST points, or
 * waits for them — bounded by the deadline (`options.deadlineAt`) and the caller's signal only:
 * pacing is the broker's own doing, not the platform being slow; points that cannot come before
 * the deadline, in this instance's window or the shared one, are not waited for (refused at once,
 * as a rate limit) — then takes a slot or queues for
 * one, which counts against the same timeout (and deadline) as the request itself. Points are spent
 * only if the call is sent. With a deadline, the timeout is min(timeoutMs, time left once the
 * points are in); with none left, nothing is sent (a deadline error).
 *
 * One AbortController per call: the caller's signal (Octokit's, withRetry's attempt) is followed
 * with a listener rather than `AbortSignal.any()`, and the points and the slot are taken without a
 * promise when they are free (2% of the broker's CPU per /token exchange, `npm run bench -- token`).
 *
 * The broker's transport (upstream-fetch.ts) never follows a redirect: the 3xx comes back and is
 * refused here. For a WHATWG fetch injected instead (a test's), a request with a body (the mint,
 * GraphQL, update-branch) asks for `redirect: "error"`: under any other mode undici's fetch copies
 * the request before sending it, teeing its body stream. That fetch then refuses a
 * 301/302/303/307/308 itself, as a network error whose status is not kept: the same
 * RedirectRefusedError without the status.
 */
export async function fetchText(
  fetchImpl: typeof fetch,
  timeoutMs: number,
  input: string | URL | Request,
  init?: RequestInit,
  gate?: UpstreamGate,
  options: FetchTextOptions = {},
): Promise<{ response: Response; text: string; json?: JsonRead }> {
  const url = typeof input === "string" || input instanceof URL ? String(input) : input.url;
  const method = init?.method ?? "GET";
  const call = gate?.describe(method, url, authorizationOf(init?.headers));
  const now = options.now ?? Date.now;
  const { deadlineAt } = options;
  const outer = init?.signal ?? undefined;
  if (outer?.aborted) throw outer.reason;
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(outer!.reason);
  outer?.addEventListener("abort", onOuterAbort, { once: true });
  let reservation: Reservation | null = null;
  let sent = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let leave: (() => void) | undefined;
  try {
    if (gate && call) {
      const refusal = gate.paused(call);
      if (refusal) return localRefusal(refusal);
      const paced = gate.tryPace(call);
      if (paced !== undefined) reservation = paced;
      else {
        // Points that cannot come before the deadline are not waited for: the call is refused now,
        // as a rate limit with the wait (the route answers at once, with that Retry-After).
        const tooLate = deadlineAt === undefined ? null : gate.pointsTooLate(call, deadlineAt);
        if (tooLate) return localRefusal(tooLate);
        if (deadlineAt !== undefined) timer = setTimeout(() => controller.abort(deadlineError(`${method} ${url}`)), Math.max(0, deadlineAt - now()));
        const paced = await gate.pace(call, controller.signal, deadlineAt);
        clearTimeout(timer);
        // The shared window (docs/operations.md#shared-limits) has no room before the deadline: the same refusal.
        if (paced !== null && "refused" in paced) return localRefusal(paced);
        reservation = paced;
      }
    }
    let attemptMs = timeoutMs;
    if (deadlineAt !== undefined) {
      const leftMs = deadlineAt - now();
      if (leftMs <= 0) throw deadlineError(`${method} ${url}`);
      attemptMs = Math.min(attemptMs, leftMs);
    }
    timer = setTimeout(() => controller.abort(new Error(`upstream timeout after ${attemptMs} ms`)), attemptMs);
    const { signal } = controller;
    if (gate && call) {
      const entered = gate.tryEnter(call) ?? (await gate.enter(call, signal));
      if (typeof entered !== "function") return localRefusal(entered);
      leave = entered;
    }
    sent = true;
    const bodied = init?.body != null || (input instanceof Request && input.body !== null);
    let response: Response;
    try {
      response = await fetchImpl(input, { ...init, signal, redirect: bodied ? "error" : "manual" });
    } catch (error) {
      if (bodied && isRefusedRedirect(error)) throw new RedirectRefusedError(null);
      throw error;
    }
    if (isRedirect(response)) {
      await response.body?.cancel().catch(() => undefined);
      throw new RedirectRefusedError(response.status);
    }
    if (response.ok) options.onHeaders?.(response.headers);
    const stream = options.stream && response.ok ? chunksOf(response) : undefined;
    if (stream) {
      const reader = options.stream!();
      for await (const chunk of stream) reader.push(chunk);
      const json = reader.end();
      if (call) gate?.observe(call, response.status, response.headers, "");
      return { response, text: json.json ? "" : json.text, json };
    }
    const text = await response.text();
    if (call) gate?.observe(call, response.status, response.headers, text);
    return { response, text };
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onOuterAbort);
    leave?.();
    reservation?.settle(sent);
  }
}

/** fetchText's options: the deadline, and how to read a success's body. */
interface FetchTextOptions extends Deadline {
  /**
   * Read a 2xx answer's body as it arrives with this reader (streamed-json.ts), under the same
   * timer, instead of as one text: the answer comes back as `json`, and `text` is "" unless the
   * body is not JSON. Other answers are read as text.
   */
  stream?: () => StreamedJson;
  /** A 2xx answer's headers, as soon as they are in (before its body is read). */
  onHeaders?: (headers: Headers) => void;
}

/** The body's chunks, if it can be iterated (fetch's ReadableStream, upstream-fetch.ts's body). */
function chunksOf(response: Response): AsyncIterable<Uint8Array> | undefined {
  const body = response.body as unknown as Partial<AsyncIterable<Uint8Array>> | null;
  return typeof body?.[Symbol.asyncIterator] === "function" ? (body as AsyncIterable<Uint8Array>) : undefined;
}

/** A request the gate did not send, answered as the platform answers a rate limit. */
function localRefusal(refusal: LocalRefusal): { response: Response; text: string } {
  const message = {
    "queue full": "tokensmith: too many platform requests waiting",
    "rate limited": "tokensmith: platform rate limit in effect for this call",
    points: "tokensmith: no points for this call before its deadline (UPSTREAM_POINTS_PER_MINUTE)",
  }[refusal.why];
  const text = JSON.stringify({ message });
  const response = new Response(text, { status: 429, headers: { "retry-after": String(refusal.retryAfterSeconds), "content-type": "application/json; charset=utf-8" } });
  return { response, text };
}

/**
 * fetch's network error for a redirect under `redirect: "error"`. undici gives it no code or type
 * of its own, only this text (the same in the undici of Node 20, 22 and 24); should it ever change,
 * the redirect is still not followed, only retried (test/redirects.test.ts counts the attempts).
 */
function isRefusedRedirect(error: unknown): boolean {
  // By name, not instanceof: the fetch may come from another realm (a test's VM context).
  const failure = error as { name?: unknown; cause?: { message?: unknown } } | null;
  return failure?.name === "TypeError" && failure.cause?.message === "unexpected redirect";
}

/** A 3xx that points elsewhere (or an opaque one); 304 Not Modified is an answer, not a redirect. */
function isRedirect(response: Response): boolean {
  if (response.type === "opaqueredirect") return true;
  return response.status >= 300 && response.status < 400 && response.status !== 304;
}

/**
 * `fetchText` in fetch's shape, for Octokit and the key-set fetches: the buffered answer in the
 * part of the Response shape they read — status, url, headers, text(), json(), arrayBuffer(), and
 * a body stream made only if asked for.
 */
export function fetchWithTimeout(fetchImpl: typeof fetch, timeoutMs: number, gate?: UpstreamGate): typeof fetch {
  return async (input, init) => {
    const { response, text } = await fetchText(fetchImpl, timeoutMs, input, init, gate);
    return bufferedResponse(response, text);
  };
}

function bufferedResponse(response: Response, text: string): Response {
  const answer = {
    status: response.status,
    statusText: response.statusText,
    ok: response.ok,
    url: response.url,
    headers: response.headers,
    redirected: response.redirected,
    // A stream only for callers that ask for one (Octokit's parseSuccessResponseBody: false).
    get body() {
      return new Response(text).body;
    },
    bodyUsed: false,
    text: async () => text,
    json: async () => JSON.parse(text) as unknown,
    arrayBuffer: async () => new TextEncoder().encode(text).buffer,
  };
  return answer as unknown as Response;
}

/** An Octokit `request` bound to one platform's REST base, with the injected fetch and a timeout. */
export function createPlatformRequest(options: PlatformRequestOptions): OctokitRequest {
  return octokitRequest.defaults({
    baseUrl: options.apiBase,
    headers: { "user-agent": "tokensmith", "x-github-api-version": API_VERSION, "accept-encoding": "gzip" },
    request: { fetch: fetchWithTimeout(options.fetch, options.timeoutMs, options.gate) },
  });
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  baseDelayMs: number;
  /** Longest wait for a rate limit's reset or retry-after; a longer one fails now. */
  maxWaitMs: number;
  sleep?: (ms: number) => Promise<void>;
  /** Told of every retry before its wait (the broker logs each one). */
  onRetry?: (info: RetryInfo) => void;
}

export interface RetryInfo {
  /** Which call, e.g. "mint". */
  call: string;
  /** The attempt that failed (1 = the first). */
  attempt: number;
  /** The platform's status; undefined for a network error or timeout. */
  status: number | undefined;
  waitMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseDelayMs: 200, maxWaitMs: 5000 };

/** A time by which a platform call must be answered, retries and waits included. */
interface Deadline {
  /** Epoch milliseconds; undefined = no deadline (each attempt has its own timeout only). */
  deadlineAt?: number;
  /** Milliseconds since the epoch. Default: Date.now. */
  now?: () => number;
  /**
   * The attempts honour `attempt.deadlineAt` on their own, waits included (the lean platform
   * client does): withRetry then gives them no timer or signal of their own. Without it, each
   * attempt is raced against the time left and aborted through its signal.
   */
  selfBounded?: boolean;
}

/** What one attempt is given: abort at `signal` (the deadline), and the deadline itself. */
interface Attempt {
  signal?: AbortSignal;
  deadlineAt?: number;
}

/** An attempt with less time left than this is not started, nor a wait that would leave less. */
export const MIN_ATTEMPT_MS = 50;

/**
 * A call that ran out of time, shaped like a timeout: Octokit's RequestError with status 500 and
 * no response, so every caller maps it to its route's code exactly as a timeout today.
 */
export function deadlineError(call: string): RequestError {
  return new RequestError(`deadline reached: ${call} not answered in time`, 500, { request: { method: "GET", url: call, headers: {} } });
}

/**
 * Retries what can succeed on retry (docs/design.md#decisions-where-the-contract-was-open): network errors and timeouts, 5xx, and rate limits
 * after their wait. Never another 4xx. Call it only for safe requests (GETs, the idempotent mint).
 *
 * With a deadline: an attempt's time is min(its own timeout, time left) — the attempt is given an
 * AbortSignal and `deadlineAt` to pass on, and is abandoned at the deadline whatever it does; no
 * attempt starts with less than MIN_ATTEMPT_MS left (a deadline error), and no backoff or
 * rate-limit wait starts that would leave less (the last failure is thrown at once).
 */
export async function withRetry<T>(policy: RetryPolicy, call: string, run: (attempt: Attempt) => Promise<T>, deadline: Deadline = {}): Promise<T> {
  const sleep = policy.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = deadline.now ?? Date.now;
  const { deadlineAt } = deadline;
  for (let attempt = 1; ; attempt += 1) {
    try {
      if (deadlineAt === undefined) return await run({});
      const leftMs = deadlineAt - now();
      if (leftMs < MIN_ATTEMPT_MS) throw deadlineError(call);
      if (deadline.selfBounded) return await run({ deadlineAt });
      return await attemptWithin(run, leftMs, deadlineAt, call);
    } catch (error) {
      const waitMs = retryDelay(error, attempt, policy);
      if (waitMs === null || attempt >= policy.attempts) throw error;
      if (deadlineAt !== undefined && now() + waitMs + MIN_ATTEMPT_MS > deadlineAt) throw error;
      policy.onRetry?.({ call, attempt, status: statusOf(error), waitMs });
      await sleep(waitMs);
    }
  }
}

/** One attempt, abandoned (and its fetch aborted) when `leftMs` runs out. */
async function attemptWithin<T>(run: (attempt: Attempt) => Promise<T>, leftMs: number, deadlineAt: number, call: string): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = deadlineError(call);
      controller.abort(error);
      reject(error);
    }, leftMs);
  });
  try {
    return await Promise.race([run({ signal: controller.signal, deadlineAt }), expired]);
  } finally {
    clearTimeout(timer);
  }
}

export function statusOf(error: unknown): number | undefined {
  // Octokit reports a failed fetch (refused, reset, timeout) as status 500 with no response.
  if (error instanceof RequestError) return error.response ? error.status : undefined;
  return undefined;
}

function retryDelay(error: unknown, attempt: number, policy: RetryPolicy): number | null {
  if (!(error instanceof RequestError)) return null;
  if (error.cause instanceof RedirectRefusedError) return null;
  const backoff = policy.baseDelayMs * 2 ** (attempt - 1);
  if (!error.response) return backoff;
  const { status } = error;
  const headers = error.response.headers as Record<string, string | undefined>;
  if (status === 403 || status === 429) {
    const retryAfter = Number(headers["retry-after"]);
    if (Number.isFinite(retryAfter) && retryAfter >= 0) return capped(retryAfter * 1000, policy);
    if (headers["x-ratelimit-remaining"] === "0") {
      const reset = Number(headers["x-ratelimit-reset"]);
      return Number.isFinite(reset) ? capped(Math.max(0, reset * 1000 - Date.now()), policy) : null;
    }
    return null;
  }
  return status >= 500 ? backoff : null;
}

function capped(waitMs: number, policy: RetryPolicy): number | null {
  return waitMs <= policy.maxWaitMs ? waitMs : null;
}
