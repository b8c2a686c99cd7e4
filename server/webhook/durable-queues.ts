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
  const [{ createRedisQueue }, { createRedisCheckRunQueue }] = await Promise.all([import("./redis-queue.js"), import("./redis-check-run-queue.js")]);
  const push = createRedisQueue(ctx, url);
  return { push, checks: createRedisCheckRunQueue(ctx, push.redis, share) };
}
