import { parseQueueAddress } from "../webhook/queue-address.js";
import { isRedisUrl } from "./redis-connection.js";

/** Where the instances share their lookup limits: a Redis URL and the prefix of the keys there. */
export interface SharedLimitsAddress {
  url: string;
  prefix: string;
}

/**
 * LEGACY_QUOTA_KV when it is a Redis (keys `tokensmith-limits:…`), else WEBHOOK_QUEUE's Redis (keys
 * under its `?prefix=`), else none: each instance keeps its own (docs/operations.md#caches).
 * LEGACY_QUOTA_KV first: it is the store the instances already share state in (deliveries, the
 * crawl lock); WEBHOOK_QUEUE is a Redis every instance reaches too.
 */
export function sharedLimitsAddress(settings: { releasesKvUrl: string | null; webhookQueueUrl: string | null }): SharedLimitsAddress | null {
  if (isRedisUrl(settings.releasesKvUrl)) return { url: settings.releasesKvUrl, prefix: "tokensmith-limits" };
  if (!settings.webhookQueueUrl) return null;
  try {
    const queue = parseQueueAddress(settings.webhookQueueUrl);
    return { url: queue.redisUrl, prefix: `${queue.prefix}:limits` };
  } catch {
    return null; // a WEBHOOK_QUEUE the broker refuses anyway (doctor and the queue say why)
  }
}
