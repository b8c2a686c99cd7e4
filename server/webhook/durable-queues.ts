import type { PolicyCheckDeps } from "../policy/policy-check-run.js";
import type { CheckRunQueue } from "./check-run-queue.js";
import type { CheckRunShare } from "./check-run-share.js";
import type { PushQueue } from "./memory-queue.js";
import type { RedisQueueDeps } from "./redis-queue.js";

/**
 * The push and check-run queues on WEBHOOK_QUEUE's Redis. BullMQ (and its Lua scripts) is loaded
 * here, on first use, so a broker without WEBHOOK_QUEUE never loads it (docs/design.md#layers).
 */
export async function createDurableQueues(ctx: RedisQueueDeps & PolicyCheckDeps, url: string, share: CheckRunShare): Promise<{ push: PushQueue; checks: CheckRunQueue }> {
  // One import after the other: jest's module linker fails two concurrent dynamic imports that
  // share a dependency ("… is not linked"), which made the first WEBHOOK_QUEUE delivery of a test
  // file answer 500 instead of 503 webhook_queue_unavailable. Node itself does not care.
  const { createRedisQueue } = await import("./redis-queue.js");
  const { createRedisCheckRunQueue } = await import("./redis-check-run-queue.js");
  const push = createRedisQueue(ctx, url);
  return { push, checks: createRedisCheckRunQueue(ctx, push.redis, share) };
}
