import { Queue, WaitingError, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import { BrokerError } from "../../shared/broker-error.js";
import type { PolicyCheckDeps, PolicyPullRequest } from "../policy/policy-check-run.js";
import { BODY_DIGEST_TTL_MS } from "./claim-log.js";
import { CHECK_RUN_CONCURRENCY, CHECK_RUN_QUEUE_LIMIT, headSubject, runCheckRunJob, type CheckRunQueue, type HeadClaims } from "./check-run-queue.js";
import type { CheckRunShare } from "./check-run-share.js";
import type { DeliveryMark } from "./memory-claims.js";
import { claimInRedis, claimKeys } from "./redis-claims.js";
import { QUEUE_RETRY_AFTER_S, type QueueRedis } from "./redis-queue.js";

const QUEUE_NAME = "check-run";
/** Finished jobs are kept this long (seconds) for an operator to look at. */
const KEEP_S = 24 * 3600;

interface JobData {
  pr: PolicyPullRequest;
  delivery: DeliveryMark;
}

/**
 * The durable check-run queue (`WEBHOOK_QUEUE`), on BullMQ beside the push queue, on its Redis and
 * prefix: any instance runs any job, jobs survive restarts. Deliveries are claimed with the push
 * queue's keys (`<prefix>:delivery:<id>`, `<prefix>:body:<sha256>`), heads with
 * `SET <prefix>:check-run-head:<repository id>:<sha> NX PX 24h`, each atomic across instances; a
 * check that failed before acting hands all three back.
 */
export function createRedisCheckRunQueue(ctx: PolicyCheckDeps, redis: QueueRedis, share: CheckRunShare): CheckRunQueue {
  const { address, commands, bounded } = redis;
  const { prefix } = address;
  const keys = claimKeys(prefix);
  const headKey = (pr: PolicyPullRequest) => `${prefix}:check-run-head:${headSubject(pr)}`;
  const queue = new Queue(QUEUE_NAME, { connection: commands, prefix });
  queue.on("error", () => undefined); // logged through the connection's handler
  const stop = new AbortController();
  const heads: HeadClaims = {
    claim: async (pr) => (await commands.set(headKey(pr), "1", "PX", BODY_DIGEST_TTL_MS, "NX")) === "OK",
    release: async (pr) => void (await commands.del(headKey(pr))),
  };

  const processJob = async (job: Job<JobData>, token?: string) => {
    const { pr, delivery } = job.data;
    const end = await runCheckRunJob(ctx, pr, { heads, share, signal: stop.signal });
    if (end === "failed" && stop.signal.aborted) {
      // Stopped while it waited for its share: back to waiting (claims kept), for any instance.
      await job.moveToWait(token);
      throw new WaitingError();
    }
    if (end === "failed") await commands.del(...(delivery.id ? [keys.delivery(delivery.id)] : []), keys.body(delivery.bodyDigest));
  };
  const workerConnection = new Redis(address.redisUrl, { maxRetriesPerRequest: null });
  workerConnection.on("error", () => undefined); // the commands connection logs Redis errors
  const worker = new Worker<JobData>(QUEUE_NAME, processJob, { connection: workerConnection, prefix, concurrency: CHECK_RUN_CONCURRENCY, lockDuration: address.leaseMs, stalledInterval: address.leaseMs });
  worker.on("error", (error: Error) => ctx.log.warn({ err: error.message }, "check-run queue worker error"));

  return {
    async enqueue(pr, delivery) {
      let claim: Awaited<ReturnType<typeof claimInRedis>> | undefined;
      try {
        if ((await bounded(queue.getJobCountByTypes("waiting", "delayed", "prioritized"))) >= CHECK_RUN_QUEUE_LIMIT) throw new Error("check-run queue full");
        claim = await claimInRedis(commands, prefix, delivery, bounded);
        if (claim.outcome !== "claimed") return claim.outcome;
        await bounded(queue.add(QUEUE_NAME, { pr, delivery }, { removeOnComplete: { age: KEEP_S, count: 10_000 }, removeOnFail: { age: KEEP_S } }));
        return "queued";
      } catch (error) {
        await claim?.undo();
        throw new BrokerError("webhook_queue_unavailable", { detail: "check-run queue unavailable", cause: error, retryAfter: QUEUE_RETRY_AFTER_S });
      }
    },
    async close() {
      stop.abort(new Error("stopping"));
      const within = (work: Promise<unknown>, ms: number) => Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
      await within(worker.close(), 5_000);
      await within(queue.close(), 1_000);
      workerConnection.disconnect();
    },
  };
}
