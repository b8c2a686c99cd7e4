import pLimit from "p-limit";
import { BrokerError } from "../../shared/broker-error.js";
import type { Logger } from "../log.js";
import { statusOf, withRetry, type OctokitRequest, type RetryPolicy } from "../github/platform-request.js";
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
  failed: Array<{ number: number; status: number; error: string }>;
}

interface Platform {
  request: OctokitRequest;
  token: string;
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
      }),
    );
    // An answer that is not a list is unusable, not "no pull requests": fail the listing.
    if (!Array.isArray(response.data)) throw new BrokerError("internal_error", { detail: "pull request listing is not a JSON array" });
    for (const pull of response.data as Array<{ number?: unknown; state?: unknown; head?: { sha?: unknown }; base?: { ref?: unknown } }>) {
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
 * `PUT …/pulls/{n}/update-branch` with the head we saw, so a pull request pushed to in between is
 * left alone (422) rather than merged blindly. Bounded concurrency; one failure never stops the
 * others. Not retried: a repeated update is not a no-op, and a redelivery can try again.
 * https://docs.github.com/rest/pulls/pulls#update-a-pull-request-branch
 */
export async function updatePullRequests(platform: Platform, push: BranchPush, pulls: OpenPullRequest[]): Promise<UpdateOutcome> {
  const limit = pLimit(UPDATE_CONCURRENCY);
  const outcome: UpdateOutcome = { updated: [], failed: [] };
  await Promise.all(
    pulls.map((pull) =>
      limit(async () => {
        try {
          await platform.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/update-branch", {
            owner: push.owner,
            repo: push.name,
            pull_number: pull.number,
            expected_head_sha: pull.headSha,
            headers: { authorization: `token ${platform.token}` },
          });
          outcome.updated.push(pull.number);
        } catch (error) {
          const status = statusOf(error) ?? 0;
          const data = (error as { response?: { data?: { message?: unknown } } }).response?.data;
          platform.log.warn(
            { repository: push.repository, number: pull.number, status, platform_message: typeof data?.message === "string" ? data.message.slice(0, 300) : undefined, request_id: platform.requestId },
            "update-branch failed",
          );
          outcome.failed.push({ number: pull.number, status, error: isRateLimit(error) ? "rate_limited" : failureWord(status) });
        }
      }),
    ),
  );
  outcome.updated.sort((a, b) => a - b);
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

/** A 403 or 429 that says it is a rate limit (primary or secondary), not a refusal. */
function isRateLimit(error: unknown): boolean {
  const headers = (error as { response?: { headers?: Record<string, string | undefined> } }).response?.headers ?? {};
  return headers["retry-after"] !== undefined || headers["x-ratelimit-remaining"] === "0";
}

/** A listing that failed after its retries: the delivery is not acted on (a redelivery may be). */
export function listingFailed(error: unknown): BrokerError {
  return new BrokerError("internal_error", { detail: `listing pull requests failed: status ${statusOf(error) ?? "network"}`, cause: error });
}
