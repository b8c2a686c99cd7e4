import type { KeyValueStore } from "../kv/key-value-store.js";

/** How long a delivery id is remembered: a redelivery within this window is not acted on twice. */
export const DELIVERY_TTL_MS = 60 * 60_000;
const MEMORY_LIMIT = 10_000;
const DELIVERY_ID = /^[A-Za-z0-9-]{1,100}$/;

/**
 * Delivery ids (`X-GitHub-Delivery`) already acted on. Kept in this process's memory (bounded,
 * oldest dropped first) and, when `LEGACY_QUOTA_KV` is bound, in that store too, so every broker
 * instance sees them. A store that is down costs only the cross-instance view (the store's calls
 * never throw). Ids in flight are claimed so two concurrent redeliveries act once.
 */
export function createDeliveryLog(options: { now: () => number; limit?: number }) {
  const limit = options.limit ?? MEMORY_LIMIT;
  const remembered = new Map<string, number>();
  const inFlight = new Set<string>();
  const key = (id: string) => `delivery:${id}`;

  const seenInMemory = (id: string): boolean => {
    const until = remembered.get(id);
    if (until === undefined) return false;
    if (until > options.now()) return true;
    remembered.delete(id);
    return false;
  };

  return {
    /** Only GitHub's GUID-like ids are tracked; anything else is acted on as if new. */
    usable(id: string | undefined): id is string {
      return typeof id === "string" && DELIVERY_ID.test(id);
    },
    /** Claims the id for this request; false when it was acted on within the hour or is being acted on now. */
    async claim(id: string, store: KeyValueStore | null): Promise<boolean> {
      if (inFlight.has(id) || seenInMemory(id)) return false;
      inFlight.add(id);
      if (store && (await store.get<number>(key(id))) !== undefined) {
        inFlight.delete(id);
        remembered.set(id, options.now() + DELIVERY_TTL_MS);
        return false;
      }
      return true;
    },
    /** The claimed delivery was acted on: remember it for an hour. */
    async done(id: string, store: KeyValueStore | null): Promise<void> {
      inFlight.delete(id);
      remembered.delete(id);
      remembered.set(id, options.now() + DELIVERY_TTL_MS);
      while (remembered.size > limit) remembered.delete(remembered.keys().next().value as string);
      if (store) await store.set(key(id), options.now(), DELIVERY_TTL_MS);
    },
    /** A delivery whose queued work failed before acting: forgotten, so a redelivery tries again. */
    async forget(id: string, store: KeyValueStore | null): Promise<void> {
      remembered.delete(id);
      if (store) await store.set(key(id), options.now(), 1);
    },
    /** The claimed delivery failed before acting: a redelivery may try again. */
    release(id: string): void {
      inFlight.delete(id);
    },
  };
}

export type DeliveryLog = ReturnType<typeof createDeliveryLog>;
