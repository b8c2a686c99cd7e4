import { BrokerError } from "../../shared/broker-error.js";
import type { KeyValueStore } from "../kv/key-value-store.js";
import type { LeaseLock } from "../kv/lease-lock.js";
import { runPolicyCheck, type CheckEnd, type PolicyCheckDeps, type PolicyPullRequest } from "../policy/policy-check-run.js";
import { createBodyDigestLog } from "./claim-log.js";
import type { CheckRunShare } from "./check-run-share.js";
import { createMemoryClaims, type ClaimOutcome, type DeliveryMark } from "./memory-claims.js";

/** What the route needs of a check-run queue, in process or in Redis (one job per delivery). */
export interface CheckRunQueue {
  /**
   * Claims the delivery as a push is claimed (its id within the hour, its signed body within the
   * day: a replay under a fresh id) and queues its check. Throws when the queue cannot take it
   * (full, or its Redis down; the claims are then handed back).
   */
  enqueue(pr: PolicyPullRequest, delivery: DeliveryMark, store: KeyValueStore | null, lock: LeaseLock | null): Promise<Exclude<ClaimOutcome, "claimed"> | "queued">;
  close(): Promise<void>;
}

/** Checks run at once per instance: each costs a few reads, and they come from anyone who can open a pull request. */
export const CHECK_RUN_CONCURRENCY = 2;
/** Checks waiting at most (per instance in process, in all on the durable queue); past it a delivery is answered 500. */
export const CHECK_RUN_QUEUE_LIMIT = 1_000;

/** The per-head claim's subject: a check run belongs to a commit of a repository, whichever pull request or delivery names it. */
export const headSubject = (pr: PolicyPullRequest) => `${pr.repositoryId}:${pr.headSha}`;

/** Where a job's head is claimed: at most one check per (repository, head sha) within a day. */
export interface HeadClaims {
  claim(pr: PolicyPullRequest): Promise<boolean>;
  release(pr: PolicyPullRequest): Promise<void>;
}

/**
 * One job: the head claimed first (a head already checked, or being checked, costs nothing more),
 * then the check; a check that failed before acting hands the head back.
 */
export async function runCheckRunJob(ctx: PolicyCheckDeps, pr: PolicyPullRequest, deps: { heads: HeadClaims; share: CheckRunShare; signal: AbortSignal }): Promise<CheckEnd> {
  if (!(await deps.heads.claim(pr))) {
    ctx.log.info({ repository: `${pr.owner}/${pr.repo}`, pull_request: pr.number, head_sha: pr.headSha }, "policy check run skipped: this head was checked already");
    return "done";
  }
  const end = await runPolicyCheck(ctx, pr, { appCall: (points, call) => deps.share.spend(points, call, deps.signal) });
  if (end === "failed") await deps.heads.release(pr);
  return end;
}

/**
 * The in-process check-run queue (no `WEBHOOK_QUEUE`): first in, first out, CHECK_RUN_CONCURRENCY
 * at once, at most CHECK_RUN_QUEUE_LIMIT waiting. Claims as the in-process push queue's; heads
 * claimed in this process and, when `LEGACY_QUOTA_KV` is a Redis, by a lease there. Waiting checks
 * are lost when the process stops (logged).
 */
export function createMemoryCheckRunQueue(ctx: PolicyCheckDeps, share: CheckRunShare): CheckRunQueue {
  const claims = createMemoryClaims({ now: ctx.now });
  const heads = createBodyDigestLog({ now: ctx.now, claimPrefix: "tokensmith-check-runs:head:" });
  const waiting: Array<{ pr: PolicyPullRequest; delivery: DeliveryMark; store: KeyValueStore | null; lock: LeaseLock | null }> = [];
  const running = new Set<Promise<void>>();
  const stop = new AbortController();

  const pump = () => {
    while (!stop.signal.aborted && running.size < CHECK_RUN_CONCURRENCY && waiting.length > 0) {
      const { pr, delivery, store, lock } = waiting.shift()!;
      const headClaims: HeadClaims = { claim: (one) => heads.claim(headSubject(one), lock), release: (one) => heads.forget(headSubject(one)) };
      const run = runCheckRunJob(ctx, pr, { heads: headClaims, share, signal: stop.signal })
        .then(async (end) => {
          if (end !== "failed") return;
          if (delivery.id !== undefined) await claims.forgetId(delivery.id, store);
          await claims.forgetBody(delivery.bodyDigest);
        })
        .catch((error: unknown) => ctx.log.error({ err: String(error) }, "policy check job crashed"))
        .finally(() => {
          running.delete(run);
          pump();
        });
      running.add(run);
    }
  };

  return {
    async enqueue(pr, delivery, store, lock) {
      if (waiting.length >= CHECK_RUN_QUEUE_LIMIT) throw new BrokerError("internal_error", { detail: "check-run queue full" });
      const claimed = await claims.claim(delivery, store, lock);
      if (claimed !== "claimed") return claimed;
      waiting.push({ pr, delivery, store, lock });
      pump();
      return "queued";
    },
    async close() {
      stop.abort(new Error("stopping"));
      if (waiting.length > 0) ctx.log.warn({ checks: waiting.map(({ pr }) => ({ repository: `${pr.owner}/${pr.repo}`, pull_request: pr.number })) }, "pending policy checks dropped at shutdown (in-process queue)");
      waiting.length = 0;
      await Promise.all([...running]);
    },
  };
}
