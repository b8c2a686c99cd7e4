import { BrokerError } from "../../shared/broker-error.js";
import type { OctokitRequest } from "../github/platform-request.js";
import type { Metrics } from "../metrics.js";
import type { PlatformSettings, Settings } from "../settings.js";
import { requireApp } from "../token/trust.js";
import type { MintedToken } from "../installation/mint-installation-token.js";
import { mintForPush, type PushMintDeps } from "./mint-for-push.js";
import type { Pacer } from "./pacer.js";
import type { BranchPush } from "./read-push.js";
import { hostname } from "node:os";
import { earlierUpdateLanded, listingFailed, listOpenPullRequests, updatePullRequests, type OpenPullRequest, type UpdateResult } from "./update-pull-requests.js";

/** This process, as named in the audit line and in a job's progress (`host:pid`). */
export const INSTANCE = `${hostname()}:${process.pid}`;

/** What a push job uses of the broker's context (passed in: docs/design.md#layers). */
export type PushJobDeps = PushMintDeps & { metrics: Metrics; requestFor: (platform: PlatformSettings) => OctokitRequest; settings: () => Settings };

/** A job's token is replaced once it has less than this left (platform tokens last an hour). */
const TOKEN_REFRESH_MARGIN_MS = 5 * 60_000;

/** One unit of queued work: bring the open pull requests on one (repository, branch) up to date. */
export interface PushJob {
  id: string;
  push: BranchPush;
  /** Every `X-GitHub-Delivery` that joined this job. */
  deliveries: string[];
}

/**
 * What a job has done so far, kept where the job lives (Redis for the durable queue) so a job
 * taken over after its instance died carries on instead of starting again: the listing (with the
 * heads it saw, which every update is conditioned on) and each pull request's answer.
 */
export interface JobProgress {
  listing(): Promise<OpenPullRequest[] | undefined>;
  saveListing(pulls: OpenPullRequest[]): Promise<void>;
  results(): Promise<Map<number, UpdateResult>>;
  record(number: number, result: UpdateResult): Promise<void>;
  /** Notes that `instance` is sending update-branch for this pull request (before the call). */
  markSent(number: number, instance: string): Promise<void>;
  /** The pull requests an update-branch was sent for: number → the instance that sent it. */
  sent(): Promise<Map<number, string>>;
}

type JobEnd = { end: "done" } | { end: "failed"; error: string } | { end: "interrupted"; remaining: number };

/** Progress in this process's memory (the in-process queue: nothing to take over). */
export function memoryProgress(): JobProgress {
  let pulls: OpenPullRequest[] | undefined;
  const results = new Map<number, UpdateResult>();
  const sent = new Map<number, string>();
  return {
    markSent: async (number, instance) => {
      sent.set(number, instance);
    },
    sent: async () => new Map(sent),
    listing: async () => pulls,
    saveListing: async (found) => {
      pulls = found;
    },
    results: async () => new Map(results),
    record: async (number, result) => {
      results.set(number, result);
    },
  };
}

/**
 * Runs one job: a fresh token for the repository, the open pull requests on the branch (listed once
 * per job, so a push that joined the job before it started is covered), then update-branch on
 * each one not yet answered, paced per installation. Ends in one audit line
 * (`pull_requests_updated`) unless stopped part-way (the rest is someone else's to finish).
 * A failure before any update (no App, no token, no listing) ends the job with its error code.
 */
export async function runPushJob(ctx: PushJobDeps, deps: { pacer: Pacer; stopped?: () => boolean }, job: PushJob, progress: JobProgress): Promise<JobEnd> {
  const { push } = job;
  const audit = { audit: "pull_requests_updated", instance: INSTANCE, job: job.id, repository: push.repository, branch: push.branch, installation_id: push.installationId, deliveries: job.deliveries };
  try {
    const settings = ctx.settings();
    const platform = settings.main;
    const app = requireApp(platform);
    let minted = await mintForPush(ctx, platform, app, push);
    // Paced at the hour's budget, a job can outlive its token (an hour): one fresh mint at a time
    // once the current one has less than TOKEN_REFRESH_MARGIN_MS left.
    let refreshing: Promise<MintedToken> | undefined;
    const currentToken = async (): Promise<string> => {
      if (Date.parse(minted.expires_at) - ctx.now() > TOKEN_REFRESH_MARGIN_MS) return minted.token;
      refreshing ??= mintForPush(ctx, platform, app, push).finally(() => (refreshing = undefined));
      minted = await refreshing;
      return minted.token;
    };
    const upstream = { request: ctx.requestFor(platform), token: minted.token, currentToken, retry: ctx.retry, log: ctx.log, requestId: job.id };
    let pulls = await progress.listing();
    if (pulls === undefined) {
      pulls = await listOpenPullRequests(upstream, push).catch((error: unknown) => {
        throw listingFailed(error);
      });
      await progress.saveListing(pulls);
    }
    const answered = await progress.results();
    let todo = pulls.filter((pull) => !answered.has(pull.number));
    // Sent by an earlier attempt whose process died before the answer was stored (a job taken
    // over): if the platform carried it out, it is recorded as that instance's update, not sent
    // again (it would be refused, its head having moved, and reported as a failure).
    const sentBefore = await progress.sent();
    for (const pull of todo.filter((p) => sentBefore.has(p.number))) {
      if (deps.stopped?.()) break;
      if (!(await earlierUpdateLanded(upstream, push, pull))) continue;
      await progress.record(pull.number, { updated: true, by: sentBefore.get(pull.number)! });
      todo = todo.filter((p) => p.number !== pull.number);
    }
    const pacing = {
      pacer: deps.pacer,
      rates: { perMinute: settings.updateBranchPerMinute, perHour: settings.updateBranchPerHour },
      installationId: push.installationId,
      now: ctx.now,
      record: progress.record,
      sending: (number: number) => progress.markSent(number, INSTANCE),
      stopped: deps.stopped,
    };
    const outcome = await updatePullRequests(upstream, push, todo, pacing);
    if (outcome.unfinished.length > 0) {
      ctx.metrics.webhookJobs.inc({ outcome: "interrupted" });
      return { end: "interrupted", remaining: outcome.unfinished.length };
    }

    const all = await progress.results();
    const byNumber = [...all].sort(([a], [b]) => a - b);
    const updated = byNumber.filter(([, r]) => r.updated).map(([n]) => n);
    const upToDate = byNumber.filter(([, r]) => !r.updated && r.upToDate).map(([n]) => n);
    const failed = byNumber.flatMap(([number, r]) => (r.updated || r.upToDate ? [] : [{ number, status: r.status, error: r.error }]));
    // Updated by another instance (an earlier attempt of this job) whose answer was lost with it.
    const updatedBefore = byNumber.flatMap(([number, r]) => (r.updated && r.by !== undefined && r.by !== INSTANCE ? [{ number, by: r.by }] : []));
    ctx.log.info({ ...audit, updated, up_to_date: upToDate, failed, updated_before_takeover: updatedBefore }, "push handled");
    ctx.metrics.webhookJobs.inc({ outcome: "done" });
    return { end: "done" };
  } catch (error) {
    const code = error instanceof BrokerError ? error.code : "internal_error";
    ctx.log.error({ ...audit, updated: [], up_to_date: [], failed: [], updated_before_takeover: [], error: code, detail: error instanceof Error ? error.message.slice(0, 300) : undefined }, "push job failed");
    ctx.metrics.webhookJobs.inc({ outcome: "failed" });
    return { end: "failed", error: code };
  }
}
