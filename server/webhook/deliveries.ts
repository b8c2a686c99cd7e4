import type { KeyValueStore } from "../kv/key-value-store.js";
import type { Lease, LeaseLock } from "../kv/lease-lock.js";

/** How long a delivery id is remembered: a redelivery within this window is not acted on twice. */
export const DELIVERY_TTL_MS = 60 * 60_000;
const MEMORY_LIMIT = 10_000;
const DELIVERY_ID = /^[A-Za-z0-9-]{1,100}$/;

/**
 * Delivery ids (`X-GitHub-Delivery`) already acted on. Kept in this process's memory (bounded,
 * oldest dropped first) and, when `LEGACY_QUOTA_KV` is bound, in that store too, so every broker
 * instance sees them. A store that is down costs only the cross-instance view (the store's calls
 * never throw). Ids in flight are claimed so two concurrent redeliveries act once: in this process
 * by a set of ids, across instances (a Redis `LEGACY_QUOTA_KV`) by a lease taken with
 * `SET … NX PX 1h` (the lease lock), which one instance gets and the others find taken; a
 * store's get-then-set alone would let two instances both act on copies that arrive together.
 * Redis unavailable: the claim falls back to the store's view, as before.
 */
export function createDeliveryLog(options: { now: () => number; limit?: number }) {
  const limit = options.limit ?? MEMORY_LIMIT;
  const remembered = new Map<string, number>();
  const inFlight = new Set<string>();
  /** Cross-instance claims this process took, kept (bounded like `remembered`) so a failed job can hand its claim back. */
  const leases = new Map<string, Lease>();
  const key = (id: string) => `delivery:${id}`;
  const claimKey = (id: string) => `tokensmith-deliveries:claim:${id}`;

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
    async claim(id: string, store: KeyValueStore | null, lock: LeaseLock | null = null): Promise<boolean> {
      if (inFlight.has(id) || seenInMemory(id)) return false;
      inFlight.add(id);
      const seen = () => {
        inFlight.delete(id);
        remembered.set(id, options.now() + DELIVERY_TTL_MS);
        return false;
      };
      const lease = lock ? await lock.acquire(claimKey(id), DELIVERY_TTL_MS) : "unavailable";
      if (lease === "taken") return seen();
      if (lease !== "unavailable") {
        leases.set(id, lease);
        return true;
      }
      if (store && (await store.get<number>(key(id))) !== undefined) return seen();
      return true;
    },
    /** The claimed delivery was acted on: remember it for an hour. */
    async done(id: string, store: KeyValueStore | null): Promise<void> {
      inFlight.delete(id);
      remembered.delete(id);
      remembered.set(id, options.now() + DELIVERY_TTL_MS);
      while (remembered.size > limit) remembered.delete(remembered.keys().next().value as string);
      while (leases.size > limit) leases.delete(leases.keys().next().value as string);
      if (store) await store.set(key(id), options.now(), DELIVERY_TTL_MS);
    },
    /** A delivery whose queued work failed before acting: forgotten, so a redelivery tries again. */
    async forget(id: string, store: KeyValueStore | null): Promise<void> {
      remembered.delete(id);
      if (store) await store.set(key(id), options.now(), 1);
      // Hand the claim back (only while it still holds this process's token, never a newer one).
      const lease = leases.get(id);
      leases.delete(id);
      if (lease) await lease.release();
    },
    /** The claimed delivery failed before acting: a redelivery may try again. */
    release(id: string): void {
      inFlight.delete(id);
      void leases.get(id)?.release();
      leases.delete(id);
    },
  };
}

export type DeliveryLog = ReturnType<typeof createDeliveryLog>;
