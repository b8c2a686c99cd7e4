import { randomUUID } from "node:crypto";
import type { KeyValueStore } from "../kv/key-value-store.js";
import type { LeaseLock } from "../kv/lease-lock.js";
import { createMemoryClaims, type DeliveryMark } from "./memory-claims.js";
import { createPacer, memoryPaceStore } from "./pacer.js";
import { memoryProgress, runPushJob, type PushJob, type PushJobDeps } from "./push-job.js";
import type { BranchPush } from "./read-push.js";

/** What the in-process queue uses of the broker's context (passed in: docs/design.md#layers). */
export type QueueDeps = PushJobDeps & { sleep: (ms: number) => Promise<void> };

export type { DeliveryMark } from "./memory-claims.js";

/** What the route needs of a push queue, in process or in Redis. */
export interface PushQueue {
  /**
   * Claims the delivery id (already claimed within the hour: duplicate) and then its body's digest
   * (seen within the day: replayed — under a fresh id), by this or — with Redis — any
   * instance, and queues the push, joining the pending job of its (repository, branch) when there
   * is one. Throws when the queue cannot take it (the claims are then released).
   */
  enqueue(push: BranchPush, delivery: DeliveryMark, store: KeyValueStore | null, lock?: LeaseLock | null): Promise<"queued" | "duplicate" | "replayed">;
  /** Stops taking jobs, lets running ones stop at the next pull request, closes connections. */
  close(): Promise<void>;
}

/** Jobs run at once (each on its own (repository, branch)); pacing is per installation anyway. */
export const JOB_CONCURRENCY = 4;

/** Lower-cased repository (names are case-insensitive on the platform) and the branch as pushed. */
export function coalesceKey(push: BranchPush): string {
  return `${push.repository.toLowerCase()}\n${push.branch}`;
}

/**
 * The in-process queue (no `WEBHOOK_QUEUE`): FIFO, one pending job per (repository, branch) — a push
 * arriving while one is pending joins it; one running job per (repository, branch) at a time.
 * Pending and unfinished work is lost when the process stops (logged).
 */
export function createMemoryQueue(ctx: QueueDeps): PushQueue {
  const claims = createMemoryClaims({ now: ctx.now });
  /** The body digests of each job's pushes, handed back when the job fails before acting. */
  const jobBodies = new Map<PushJob, string[]>();
  const pacer = createPacer({ store: memoryPaceStore(), now: ctx.now, sleep: ctx.sleep });
  const pending = new Map<string, PushJob>();
  const waiting: Array<{ key: string; job: PushJob; store: KeyValueStore | null }> = [];
  const runningKeys = new Set<string>();
  const running = new Set<Promise<void>>();
  let stopping = false;
  ctx.metrics.webhookQueueDepthFrom(() => waiting.length);

  const pump = () => {
    while (!stopping && running.size < JOB_CONCURRENCY) {
      const index = waiting.findIndex((entry) => !runningKeys.has(entry.key));
      if (index < 0) return;
      const [{ key, job, store }] = waiting.splice(index, 1) as [{ key: string; job: PushJob; store: KeyValueStore | null }];
      pending.delete(key);
      runningKeys.add(key);
      const run = runPushJob(ctx, { pacer, stopped: () => stopping }, job, memoryProgress())
        .then(async (end) => {
          // Nothing was done: a redelivery of any of its deliveries may try again.
          if (end.end === "failed") {
            for (const id of job.deliveries) await claims.forgetId(id, store);
            for (const digest of jobBodies.get(job) ?? []) await claims.forgetBody(digest);
          }
          if (end.end === "interrupted") ctx.log.warn({ job: job.id, repository: job.push.repository, branch: job.push.branch, deliveries: job.deliveries, remaining: end.remaining }, "push job stopped at shutdown: its remaining pull requests are not updated");
        })
        .catch((error: unknown) => ctx.log.error({ job: job.id, err: String(error) }, "push job crashed"))
        .finally(() => {
          jobBodies.delete(job);
          runningKeys.delete(key);
          running.delete(run);
          pump();
        });
      running.add(run);
    }
  };

  return {
    async enqueue(push, delivery, store, lock = null) {
      const claimed = await claims.claim(delivery, store, lock);
      if (claimed !== "claimed") return claimed;
      const deliveryId = delivery.id;
      const key = coalesceKey(push);
      const joined = pending.get(key);
      if (joined) {
        if (deliveryId !== undefined) joined.deliveries.push(deliveryId);
        jobBodies.get(joined)?.push(delivery.bodyDigest);
      } else {
        const job: PushJob = { id: randomUUID(), push, deliveries: deliveryId === undefined ? [] : [deliveryId] };
        pending.set(key, job);
        jobBodies.set(job, [delivery.bodyDigest]);
        waiting.push({ key, job, store });
      }
      pump();
      return "queued";
    },
    async close() {
      stopping = true;
      if (waiting.length > 0) {
        ctx.log.warn({ jobs: waiting.map(({ job }) => ({ job: job.id, repository: job.push.repository, branch: job.push.branch, deliveries: job.deliveries })) }, "pending push jobs dropped at shutdown (in-process queue)");
        for (const { job } of waiting) jobBodies.delete(job);
        waiting.length = 0;
        pending.clear();
      }
      await Promise.all([...running]);
    },
  };
}
