import { RequestError } from "@octokit/request-error";
import { platformWait } from "./upstream-gate.js";

/** What a client is told to wait after a platform outage (5xx, network error, timeout): the broker already retried. */
const TRANSIENT_RETRY_AFTER_SECONDS = 5;

/**
 * Seconds after which the same platform call may succeed, or undefined when it will not (a
 * permanent refusal: 404, 422, a 403 that is not a rate limit, any other 4xx). Transient: no
 * response at all (network error, timeout), a 5xx, or a rate limit as the gate reads it
 * (upstream-gate.ts, platformWait: `retry-after`, GitHub's secondary-limit message, or
 * `x-ratelimit-remaining: 0` until `x-ratelimit-reset`), whose own wait is passed on (at least
 * 1 s), or a 429 naming no wait (a minute, as GitHub says). Pure: the caller's clock is passed in.
 * The broker sends it as `Retry-After`, the mark the action retries on.
 */
export function transientRetryAfter(error: unknown, nowMs: number): number | undefined {
  if (!(error instanceof RequestError)) return undefined;
  if (!error.response || error.status >= 500) return TRANSIENT_RETRY_AFTER_SECONDS;
  const { status, headers, data } = error.response;
  if (status !== 403 && status !== 429) return undefined;
  const text = typeof data === "string" ? data : (JSON.stringify(data) ?? "");
  const wait = platformWait(status, (name) => (headers as Record<string, string | undefined>)[name], text, nowMs);
  if (wait) return Math.max(1, Math.ceil(wait.waitMs / 1000));
  return status === 429 ? 60 : undefined;
}
