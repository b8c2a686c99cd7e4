import { RequestError } from "@octokit/request-error";

/** What a client is told to wait after a platform outage (5xx, network error, timeout): the broker already retried. */
export const TRANSIENT_RETRY_AFTER_SECONDS = 5;

/**
 * A rate limit that names no wait: "wait at least one minute" (GitHub, best practices:
 * https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#handle-rate-limit-errors-appropriately).
 */
export const SECONDARY_LIMIT_WAIT_SECONDS = 60;

/**
 * Seconds after which the same platform call may succeed, or undefined when it will not (a
 * permanent refusal: 404, 422, a 403 that is not a rate limit, any other 4xx). Transient: no
 * response at all (network error, timeout), a 5xx, or a rate limit — 403/429 with `retry-after`,
 * or `x-ratelimit-remaining: 0` until `x-ratelimit-reset` — whose own wait is passed on (at least
 * 1 s). Pure: the caller's clock is passed in. The broker sends it as `Retry-After`, the mark the
 * action retries on.
 */
export function transientRetryAfter(error: unknown, nowMs: number): number | undefined {
  if (!(error instanceof RequestError)) return undefined;
  if (!error.response) return TRANSIENT_RETRY_AFTER_SECONDS;
  const { status } = error;
  if (status >= 500) return TRANSIENT_RETRY_AFTER_SECONDS;
  if (status !== 403 && status !== 429) return undefined;
  const headers = error.response.headers as Record<string, string | undefined>;
  const retryAfter = Number(headers["retry-after"] ?? NaN);
  if (headers["retry-after"] !== undefined && Number.isFinite(retryAfter) && retryAfter >= 0) return Math.max(1, Math.ceil(retryAfter));
  if (headers["x-ratelimit-remaining"] === "0") {
    const reset = Number(headers["x-ratelimit-reset"] ?? NaN);
    return Number.isFinite(reset) ? Math.max(1, Math.ceil(reset - nowMs / 1000)) : SECONDARY_LIMIT_WAIT_SECONDS;
  }
  // A 429 is always a rate limit; without a wait GitHub says to wait at least a minute. So is a
  // 403 in GitHub's words for a secondary limit, which it sometimes sends without `retry-after`
  // (the gate in upstream-gate.ts pauses that kind of call for the same minute).
  if (status === 429 || isSecondaryLimitMessage(error.response.data)) return SECONDARY_LIMIT_WAIT_SECONDS;
  return undefined;
}

/** GitHub's secondary-limit answer, known by its documented message when it names no wait. */
export function isSecondaryLimitMessage(data: unknown): boolean {
  const message = data && typeof data === "object" ? (data as { message?: unknown }).message : data;
  return typeof message === "string" && /secondary rate limit/i.test(message);
}
