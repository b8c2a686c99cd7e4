import { Queue, WaitingError, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import { BrokerError } from "../../shared/broker-error.js";
import { boundedCall, throttledWarning } from "../kv/bounded-call.js";
import { createStoreBreaker } from "../kv/store-breaker.js";
import { coalesceKey, JOB_CONCURRENCY, type PushQueue, type QueueDeps } from "./memory-queue.js";
import { createPacer, redisPaceStore } from "./pacer.js";
import { parseQueueAddress, workerTimings, type QueueAddress } from "./queue-address.js";
import { claimInRedis, claimKeys } from "./redis-claims.js";
import { runPushJob, type JobProgress } from "./push-job.js";
import type { BranchPush } from "./read-push.js";
import type { OpenPullRequest, UpdateResult } from "./update-pull-requests.js";

const QUEUE_NAME = "push";
/** How long a job's progress (its listing, each pull request's answer) is kept. */
const PROGRESS_TTL_S = 24 * 3600;
/** Upper bound on queuing one delivery (claim + add): past it the delivery is answered 500. */
const ENQUEUE_TIMEOUT_MS = 5_000;
/** Retry-After of a 503 webhook_queue_unavailable: a Redis restart is usually over by then. */
export const QUEUE_RETRY_AFTER_S = 30;
/** Upper bound on stopping the worker at shutdown (the process exits 1 after 9 s anyway). */
const CLOSE_TIMEOUT_MS = 5_000;

/** The queue's Redis, for the other durable queue on it (check runs): its address and command connection, and the bound on a call. */
export interface QueueRedis {
  address: QueueAddress;
  commands: Redis;
  bounded: <T>(work: Promise<T>) => Promise<T>;
}

/** What the durable queue needs beyond QueueDeps: the bound on a store read (the broker's Timing.kvTimeoutMs). */
export type RedisQueueDeps = QueueDeps & { timing: { kvTimeoutMs: number } };

interface JobData {
  push: BranchPush;
  /** Filled when the job first starts: the deliveries that joined it. */
  deliveries?: string[];
  /** Filled once listed: the pull requests and the heads every update is conditioned on. */
  pulls?: OpenPullRequest[];
}

/**
 * The durable queue (`WEBHOOK_QUEUE`), on BullMQ. Any instance runs any job; a job whose instance
 * stops renewing its lease is taken over; jobs survive restarts.
 * - Delivery claim: `SET <prefix>:delivery:<id> <body digest> NX PX 1h`, then the body's:
 *   `SET <prefix>:body:<sha256> <id> NX PX 24h` — each atomic, whichever instance receives it; a
 *   signed body replayed under a fresh id finds its digest taken. A job that fails before acting
 *   hands both back (the digest found through its deliveries' keys).
 * - Coalescing: BullMQ deduplication on (repository, branch) with `keepLastIfActive`: a push joins
 *   the waiting job; a push while the job runs leaves one follow-up job (at most one waiting, one
 *   running). The deliveries that joined are kept in a Redis list the job takes when it starts.
 * - Progress: the listing in the job's data before any update; each answer in a hash after it.
 *   A job taken over skips the answered pull requests and conditions the others on the heads it
 *   first listed, so a pull request is updated at most once per job (see docs/api.md#post-webhook).
 * - Pacing: one slot schedule per installation in Redis, shared by every instance.
 */
export function createRedisQueue(ctx: RedisQueueDeps, raw: string): PushQueue & { redis: QueueRedis } {
  const address = parseQueueAddress(raw);
  const { prefix } = address;
  const commands = new Redis(address.redisUrl, { maxRetriesPerRequest: 1, lazyConnect: false });
  commands.on("error", (error: Error) => ctx.log.warn({ err: error.message }, "webhook queue: Redis connection error"));
  const queue = new Queue(QUEUE_NAME, { connection: commands, prefix });
  queue.on("error", () => undefined); // logged through the connection's handler
  // The depth gauge, read at each scrape (docs/operations.md#redis-outages) as the broker's other
  // Redis reads are: within the store's bound (kvTimeoutMs), skipped for a few seconds after one
  // fails (the store breaker), counted in tokensmith_store_calls_total; and not sent at all while
  // this connection, once up, is down: it would wait in ioredis's offline queue (BullMQ's commands
  // keep one) through the reconnect backoff, seconds and growing, past a scraper's timeout. The
  // depth is then unknown (NaN).
  let connected = false;
  commands.on("ready", () => (connected = true));
  const depthRead = boundedCall(
    ctx.timing.kvTimeoutMs,
    throttledWarning((op, error) => ctx.log.warn({ op, err: error instanceof Error ? error.message : String(error) }, "webhook queue: depth not read")),
    createStoreBreaker(),
    (outcome) => ctx.metrics.storeCalls.inc({ outcome }),
  );
  ctx.metrics.webhookQueueDepthFrom(() =>
    depthRead("queue-depth", Number.NaN, async () => {
      if (connected && commands.status !== "ready") throw new Error(`connection ${commands.status}`);
      return queue.getJobCountByTypes("waiting", "delayed", "prioritized");
    }),
  );
  const pacer = createPacer({ store: redisPaceStore(commands, prefix), now: ctx.now, sleep: ctx.sleep });
  let stopping = false;

  const { delivery: deliveryKey, body: bodyKey } = claimKeys(prefix);
  const joinedKey = (key: string) => `${prefix}:push-deliveries:${encodeURIComponent(key)}`;
  const resultsKey = (jobId: string) => `${prefix}:push-results:${jobId}`;
  const sentKey = (jobId: string) => `${prefix}:push-sent:${jobId}`;

  const progressOf = (job: Job<JobData>): JobProgress => ({
    listing: async () => job.data.pulls,
    saveListing: async (pulls) => {
      await job.updateData({ ...job.data, pulls });
    },
    results: async () => {
      const stored = await commands.hgetall(resultsKey(job.id!));
      return new Map(Object.entries(stored).map(([number, json]) => [Number(number), JSON.parse(json) as UpdateResult]));
    },
    record: async (number, result) => {
      await commands.multi().hset(resultsKey(job.id!), String(number), JSON.stringify(result)).expire(resultsKey(job.id!), PROGRESS_TTL_S).exec();
    },
    markSent: async (number, instance) => {
      await commands.multi().hset(sentKey(job.id!), String(number), instance).expire(sentKey(job.id!), PROGRESS_TTL_S).exec();
    },
    sent: async () => {
      const stored = await commands.hgetall(sentKey(job.id!));
      return new Map(Object.entries(stored).map(([number, instance]) => [Number(number), instance]));
    },
  });

  const processJob = async (job: Job<JobData>, token?: string) => {
    const key = coalesceKey(job.data.push);
    if (job.data.deliveries === undefined) {
      // Take the deliveries that joined so far; a later one joins the follow-up job.
      const joined = await commands.lrange(joinedKey(key), 0, -1);
      await job.updateData({ ...job.data, deliveries: joined });
      await commands.ltrim(joinedKey(key), joined.length, -1);
    }
    const end = await runPushJob(ctx, { pacer, stopped: () => stopping }, { id: job.id!, push: job.data.push, deliveries: job.data.deliveries ?? [] }, progressOf(job));
    if (end.end === "interrupted") {
      // This instance is stopping: back to waiting, for any instance to finish (progress kept).
      ctx.log.info({ job: job.id, repository: job.data.push.repository, remaining: end.remaining }, "push job handed back to the queue at shutdown");
      await job.moveToWait(token);
      throw new WaitingError();
    }
    if (end.end === "failed") {
      // Nothing was updated: a redelivery of any of its deliveries may try again.
      const ids = job.data.deliveries ?? [];
      if (ids.length > 0) {
        const digests = (await commands.mget(...ids.map(deliveryKey))).filter((digest): digest is string => typeof digest === "string" && /^[0-9a-f]{64}$/.test(digest));
        await commands.del(...ids.map(deliveryKey), ...digests.map(bodyKey));
      }
    }
    await commands.del(resultsKey(job.id!), sentKey(job.id!));
  };

  const workerConnection = new Redis(address.redisUrl, { maxRetriesPerRequest: null });
  workerConnection.on("error", () => undefined); // the commands connection logs Redis errors
  const worker = new Worker<JobData>(QUEUE_NAME, processJob, {
    connection: workerConnection,
    prefix,
    concurrency: JOB_CONCURRENCY,
    ...workerTimings(address.leaseMs),
  });
  worker.on("error", (error: Error) => ctx.log.warn({ err: error.message }, "webhook queue worker error"));
  worker.on("stalled", (jobId: string) => ctx.log.warn({ job: jobId }, "push job's lease expired: taken over"));

  const withTimeout = <T>(work: Promise<T>): Promise<T> =>
    Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error("webhook queue: Redis did not answer in time")), ENQUEUE_TIMEOUT_MS).unref())]);

  return {
    redis: { address, commands, bounded: withTimeout },
    async enqueue(push, delivery) {
      const key = coalesceKey(push);
      let claim: Awaited<ReturnType<typeof claimInRedis>> | undefined;
      try {
        claim = await claimInRedis(commands, prefix, delivery, withTimeout);
        if (claim.outcome !== "claimed") return claim.outcome;
        if (delivery.id !== undefined && /^[A-Za-z0-9-]{1,100}$/.test(delivery.id)) await withTimeout(commands.multi().rpush(joinedKey(key), delivery.id).expire(joinedKey(key), PROGRESS_TTL_S).exec());
        await withTimeout(
          queue.add(QUEUE_NAME, { push }, {
            deduplication: { id: key, keepLastIfActive: true },
            removeOnComplete: { age: 3600, count: 10_000 },
            removeOnFail: { age: PROGRESS_TTL_S },
          }),
        );
        return "queued";
      } catch (error) {
        await claim?.undo();
        throw new BrokerError("webhook_queue_unavailable", { detail: "webhook queue unavailable", cause: error, retryAfter: QUEUE_RETRY_AFTER_S });
      }
    },
    async close() {
      stopping = true;
      // Running jobs stop at their next pull request and go back to waiting; a Redis that does not
      // answer cannot hold the shutdown: past the bound, the connections are dropped.
      const bounded = (work: Promise<unknown>, ms: number) =>
        Promise.race([work.catch(() => undefined), new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
      await bounded(worker.close(), CLOSE_TIMEOUT_MS);
      await bounded(queue.close(), 1_000);
      commands.disconnect();
      workerConnection.disconnect();
    },
  };
}
