import pLimit from "p-limit";
import { BrokerError } from "../../shared/broker-error.js";
import type { Logger } from "../log.js";
import { statusOf, withRetry, type OctokitRequest, type RetryPolicy } from "../github/platform-request.js";
import type { PaceRates, Pacer } from "./pacer.js";
import type { BranchPush } from "./read-push.js";

/** Update-branch calls in flight at once: GitHub asks for care with concurrent writes (secondary limits). */
export const UPDATE_CONCURRENCY = 4;
const PER_PAGE = 100;
/** 100 pages of 100: far beyond any real repository's open pull requests on one base. */
const MAX_PAGES = 100;

export interface OpenPullRequest {
  number: number;
  headSha: string;
}

export interface UpdateOutcome {
  updated: number[];
  /** Answered 422 "There are no new commits on the base branch.": nothing to do, not a failure. */
  upToDate: number[];
  failed: Array<{ number: number; status: number; error: string }>;
}

interface Platform {
  request: OctokitRequest;
  token: string;
  /**
   * The token for the next update-branch call (default: `token`). A job paced over more than an
   * hour outlives its first token: the job hands out a fresh one before the old one runs out.
   */
  currentToken?: () => Promise<string>;
  retry: RetryPolicy;
  log: Logger;
  requestId?: string;
}

/**
 * Every open pull request whose base is the pushed branch, all pages (GET, retried when safe).
 * https://docs.github.com/rest/pulls/pulls#list-pull-requests
 */
export async function listOpenPullRequests(platform: Platform, push: BranchPush): Promise<OpenPullRequest[]> {
  const found: OpenPullRequest[] = [];
  for (let page = 1; page <= MAX_PAGES; page += 1) {
    const response = await withRetry(platform.retry, "pull request listing", () =>
      platform.request("GET /repos/{owner}/{repo}/pulls", {
        owner: push.owner,
        repo: push.name,
        state: "open",
        base: push.branch,
        per_page: PER_PAGE,
        page,
        headers: { authorization: `token ${platform.token}` },
        request: { parseSuccessResponseBody: false },
      }),
    );
    const data = await listingData(response);
    // An answer that is not a list is unusable, not "no pull requests": fail the listing.
    if (!Array.isArray(data)) throw new BrokerError("internal_error", { detail: "pull request listing is not a JSON array" });
    for (const pull of data as Array<{ number?: unknown; state?: unknown; head?: { sha?: unknown }; base?: { ref?: unknown } }>) {
      if (typeof pull.number !== "number" || typeof pull.head?.sha !== "string") continue;
      if (pull.state !== "open" || pull.base?.ref !== push.branch) continue;
      found.push({ number: pull.number, headSha: pull.head.sha });
    }
    if (!/\brel="next"/.test(String(response.headers.link ?? ""))) return found;
  }
  platform.log.warn({ repository: push.repository, branch: push.branch, pages: MAX_PAGES, request_id: platform.requestId }, "open pull requests beyond the page cap were not updated");
  return found;
}

/**
 * A listing page's body, parsed here with JSON.parse rather than by Octokit, whose parse calls a
 * reviver on every value to keep integers past 2^53 (json-with-bigint): ten times the CPU for a
 * page of 100 pull requests (about 1.2 MB: each carries its head's and its base's repository
 * objects), and the listing reads no such integer. What Octokit would have left unparsed (a type
 * other than JSON, or text that is not JSON) is left as text here too, and fails the listing.
 */
async function listingData(response: { data: unknown; headers: Record<string, unknown> }): Promise<unknown> {
  const body = response.data as { getReader?: unknown } | null;
  // A request that ignored parseSuccessResponseBody answers its data as it is.
  if (typeof body?.getReader !== "function") return response.data;
  const text = await new Response(body as ReadableStream).text();
  if (!/^application\/(?:scim\+)?json\s*(?:;|$)/i.test(String(response.headers["content-type"] ?? ""))) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * One pull request's answer: updated (`by`: the instance whose update-branch the platform accepted,
 * when that was an earlier attempt of a job taken over), already up to date, or failed with a stable word.
 */
export type UpdateResult = { updated: true; by?: string } | { updated: false; upToDate: true } | { updated: false; upToDate?: undefined; status: number; error: string };

/** GitHub's 422 message for a pull request whose head already contains its base's head. */
export const NOTHING_NEW_ON_BASE = "There are no new commits on the base branch.";

export interface UpdatePacing {
  pacer: Pacer;
  rates: PaceRates;
  installationId: number;
  now: () => number;
  /** Called with each pull request's answer as soon as it is known (the job's progress). */
  record?: (number: number, result: UpdateResult) => Promise<void>;
  /** True once the process is stopping: no further update is started. */
  stopped?: () => boolean;
  /** Called just before each update-branch call is sent (the job's progress: an answer may be lost with the process). */
  sending?: (number: number) => Promise<void>;
}

/** Tries of one update-branch call that a rate limit refused (the platform said nothing was done). */
const RATE_LIMIT_TRIES = 4;
/** A rate limit (the platform's, or the installation's own pace) that asks for a longer wait than this fails the pull request (`rate_limited`). */
const MAX_PAUSE_MS = 15 * 60_000;

/**
 * `PUT …/pulls/{n}/update-branch` with the head we saw, so a pull request pushed to in between is
 * left alone (422) rather than merged blindly. Each call waits for its installation's slot (the
 * pacer); a rate limit's `retry-after` (or `x-ratelimit-reset`) pauses the installation and the call
 * is tried again, since the platform did nothing. Any other failure is not retried: a repeated
 * update is not a no-op. Bounded concurrency; one failure never stops the others.
 * https://docs.github.com/rest/pulls/pulls#update-a-pull-request-branch
 */
export async function updatePullRequests(platform: Platform, push: BranchPush, pulls: OpenPullRequest[], pacing: UpdatePacing): Promise<UpdateOutcome & { unfinished: number[] }> {
  const limit = pLimit(UPDATE_CONCURRENCY);
  const outcome: UpdateOutcome & { unfinished: number[] } = { updated: [], upToDate: [], failed: [], unfinished: [] };
  const updateOne = async (pull: OpenPullRequest): Promise<UpdateResult | "stopped"> => {
    let notBefore = 0;
    for (let attempt = 1; ; attempt += 1) {
      // Noted before the wait for a slot, not between the slot and the call: nothing (a store round
      // trip) sits between the pacer's grant and the call it paced. A pull request noted but not sent
      // is only looked at once more after a takeover (earlierUpdateLanded), then sent.
      await pacing.sending?.(pull.number);
      const paced = await pacing.pacer.wait(pacing.installationId, pacing.rates, { notBefore, stopped: pacing.stopped, maxWaitMs: MAX_PAUSE_MS });
      if (pacing.stopped?.()) return "stopped";
      if (!paced.paced) {
        // The installation's budget (the hour's, mostly) is spent for longer than a call may wait:
        // not sent, so the platform is not asked (and the next push's job tries again).
        platform.log.warn({ repository: push.repository, number: pull.number, not_before: new Date(paced.slotAt).toISOString(), request_id: platform.requestId }, "update-branch not sent: the installation's update budget is spent");
        return { updated: false, status: 429, error: "rate_limited" };
      }
      let token: string;
      try {
        token = platform.currentToken ? await platform.currentToken() : platform.token;
      } catch (error) {
        // No usable token: nothing was sent for this pull request.
        platform.log.warn({ repository: push.repository, number: pull.number, error: error instanceof BrokerError ? error.code : "internal_error", request_id: platform.requestId }, "update-branch not sent: no fresh token");
        return { updated: false, status: 0, error: "installation_token_failed" };
      }
      try {
        await platform.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/update-branch", {
          owner: push.owner,
          repo: push.name,
          pull_number: pull.number,
          expected_head_sha: pull.headSha,
          headers: { authorization: `token ${token}` },
        });
        return { updated: true };
      } catch (error) {
        const status = statusOf(error) ?? 0;
        const pause = rateLimitPause(error, pacing.now());
        const data = (error as { response?: { data?: { message?: unknown } } }).response?.data;
        // The head already holds the base's head (a push that changed nothing for it, or an update
        // made meanwhile): nothing to do.
        if (status === 422 && typeof data?.message === "string" && data.message.trim() === NOTHING_NEW_ON_BASE) return { updated: false, upToDate: true };
        platform.log.warn(
          { repository: push.repository, number: pull.number, status, attempt, pause_ms: pause, platform_message: typeof data?.message === "string" ? data.message.slice(0, 300) : undefined, request_id: platform.requestId },
          "update-branch failed",
        );
        if (pause !== undefined) {
          if (pause <= MAX_PAUSE_MS && attempt < RATE_LIMIT_TRIES) {
            notBefore = pacing.now() + pause;
            continue;
          }
          return { updated: false, status, error: "rate_limited" };
        }
        return { updated: false, status, error: failureWord(status) };
      }
    }
  };
  await Promise.all(
    pulls.map((pull) =>
      limit(async () => {
        if (pacing.stopped?.()) {
          outcome.unfinished.push(pull.number);
          return;
        }
        const result = await updateOne(pull);
        if (result === "stopped") {
          outcome.unfinished.push(pull.number);
          return;
        }
        await pacing.record?.(pull.number, result);
        if (result.updated) outcome.updated.push(pull.number);
        else if (result.upToDate) outcome.upToDate.push(pull.number);
        else outcome.failed.push({ number: pull.number, status: result.status, error: result.error });
      }),
    ),
  );
  outcome.updated.sort((a, b) => a - b);
  outcome.upToDate.sort((a, b) => a - b);
  outcome.failed.sort((a, b) => a.number - b.number);
  return outcome;
}

/** A stable word per kind of failure (never the platform's text); `status` says the rest. */
export function failureWord(status: number): string {
  if (status === 0) return "platform_unreachable";
  if (status === 422) return "update_rejected";
  if (status === 403 || status === 401) return "forbidden";
  if (status === 404) return "not_found";
  if (status === 429) return "rate_limited";
  if (status >= 500) return "platform_error";
  return "update_failed";
}

/**
 * A 403 or 429 that says it is a rate limit (secondary: `retry-after` seconds; primary:
 * `x-ratelimit-remaining: 0` until `x-ratelimit-reset`): how long to pause, in ms. Undefined
 * for anything else (a refusal).
 */
export function rateLimitPause(error: unknown, now: number): number | undefined {
  const status = statusOf(error);
  if (status !== 403 && status !== 429) return undefined;
  const headers = (error as { response?: { headers?: Record<string, string | undefined> } }).response?.headers ?? {};
  const retryAfter = Number(headers["retry-after"]);
  if (headers["retry-after"] !== undefined && Number.isFinite(retryAfter) && retryAfter >= 0) return retryAfter * 1000;
  const reset = Number(headers["x-ratelimit-reset"]);
  if (headers["x-ratelimit-remaining"] === "0") return Number.isFinite(reset) ? Math.max(0, reset * 1000 - now) : 60_000;
  return undefined;
}

/** A listing that failed after its retries: the delivery is not acted on (a redelivery may be). */
export function listingFailed(error: unknown): BrokerError {
  return new BrokerError("internal_error", { detail: `listing pull requests failed: status ${statusOf(error) ?? "network"}`, cause: error });
}

/**
 * Whether an update-branch sent by an earlier attempt of this job (whose process died before the
 * answer was stored) was carried out: the pull request's head is no longer the one listed, and its
 * head commit is the merge update-branch makes (two parents, the first being the listed head).
 * Anything else (the head unchanged, a push of someone else's, an unanswered call) is false: the
 * update is then sent, conditioned on the listed head as ever.
 * https://docs.github.com/rest/pulls/pulls#get-a-pull-request
 * https://docs.github.com/rest/git/commits#get-a-commit-object
 */
export async function earlierUpdateLanded(platform: Platform, push: BranchPush, pull: OpenPullRequest): Promise<boolean> {
  try {
    const token = platform.currentToken ? await platform.currentToken() : platform.token;
    const current = await withRetry(platform.retry, "pull request", () =>
      platform.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { owner: push.owner, repo: push.name, pull_number: pull.number, headers: { authorization: `token ${token}` } }),
    );
    const head = (current.data as { head?: { sha?: unknown } }).head?.sha;
    if (typeof head !== "string" || head === pull.headSha) return false;
    const commit = await withRetry(platform.retry, "commit", () =>
      platform.request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", { owner: push.owner, repo: push.name, commit_sha: head, headers: { authorization: `token ${token}` } }),
    );
    const parents = (commit.data as { parents?: Array<{ sha?: unknown }> }).parents ?? [];
    return parents.length === 2 && parents[0]?.sha === pull.headSha;
  } catch (error) {
    platform.log.warn({ repository: push.repository, number: pull.number, status: statusOf(error) ?? 0, request_id: platform.requestId }, "could not tell whether an earlier attempt's update-branch was carried out");
    return false;
  }
}
