import type { KeyValueStore } from "../kv/key-value-store.js";
import type { LeaseLock } from "../kv/lease-lock.js";
import { createBodyDigestLog, createDeliveryLog } from "./claim-log.js";

/** One verified delivery: its `X-GitHub-Delivery` (unsigned) and the SHA-256 of its signed raw body. */
export interface DeliveryMark {
  id: string | undefined;
  bodyDigest: string;
}

/** A delivery claimed for this request, or why not: its id (within the hour) or its signed body (within the day) was claimed before. */
export type ClaimOutcome = "claimed" | "duplicate" | "replayed";

/**
 * The replay defence of the in-process queues (push and check run alike): the delivery id, then
 * the body's digest, each claimed in this process and — when `LEGACY_QUOTA_KV` is a Redis — by a
 * lease there (atomic across instances). A body replayed under a fresh id spends that id too, so
 * resending it is a duplicate as well.
 */
export function createMemoryClaims(options: { now: () => number }) {
  const deliveries = createDeliveryLog(options);
  const bodies = createBodyDigestLog(options);
  return {
    async claim(delivery: DeliveryMark, store: KeyValueStore | null, lock: LeaseLock | null): Promise<ClaimOutcome> {
      const id = delivery.id;
      const tracked = deliveries.usable(id);
      if (tracked && !(await deliveries.claim(id, store, lock))) return "duplicate";
      const fresh = await bodies.claim(delivery.bodyDigest, lock);
      if (tracked) await deliveries.done(id, store);
      return fresh ? "claimed" : "replayed";
    },
    /** A delivery whose work failed before acting: forgotten, so the platform's redelivery acts. */
    async forgetId(id: string, store: KeyValueStore | null): Promise<void> {
      if (deliveries.usable(id)) await deliveries.forget(id, store);
    },
    forgetBody: (digest: string): Promise<void> => bodies.forget(digest),
  };
}

