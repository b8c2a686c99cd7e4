// The replay claims of the in-process webhook queues, one log for both subjects: delivery ids
// (`X-GitHub-Delivery`, within the hour) and push bodies (their SHA-256, within the day), and the
// check runs' heads. Each remembered in this process on the cache primitive (docs/design.md#caches:
// bounded, the oldest claim first out) and, when `LEGACY_QUOTA_KV` is a Redis, claimed there by a
// lease (`SET … NX PX`, the lease lock) that one instance gets and the others find taken. Redis
// unavailable: this process's view alone (and, for delivery ids, the store's view, as before).
import { createHash } from "node:crypto";
import { createLoadingCache } from "../cache/loading-cache.js";
import type { KeyValueStore } from "../kv/key-value-store.js";
import type { Lease, LeaseLock } from "../kv/lease-lock.js";

/** How long a delivery id is remembered: a redelivery within this window is not acted on twice. */
export const DELIVERY_TTL_MS = 60 * 60_000;
/**
 * How long a push body is remembered. `X-GitHub-Delivery` is not covered by the signature, so a
 * captured signed push replayed with a fresh id passes the delivery-id check; its body — signed,
 * and unique per genuine push (its `after`, `head_commit`, `pushed_at`) — is not new. A day
 * covers the platform's own redeliveries (same body, same id) with room to spare.
 */
export const BODY_DIGEST_TTL_MS = 24 * 60 * 60_000;
const DELIVERY_LIMIT = 10_000;
/** In-process bound for bodies: past it the oldest digests go first (the Redis view keeps the day). */
const BODY_LIMIT = 50_000;
const DELIVERY_ID = /^[A-Za-z0-9-]{1,100}$/;

/** SHA-256 of the raw body, as signed (hex). */
export function bodyDigest(raw: Buffer): string {
  return createHash("sha256").update(raw).digest("hex");
}

/**
 * Subjects claimed within `ttlMs`, in this process and by a lease in Redis: what both logs share.
 * The leases this process took are kept (bounded alike) so a failed job can hand its claim back.
 */
function createClaimLog(options: { now: () => number; ttlMs: number; limit: number; claimPrefix: string }) {
  const remembered = createLoadingCache<true>({ max: options.limit, now: options.now });
  const leases = createLoadingCache<Lease>({ max: options.limit, now: options.now });
  const release = async (subject: string): Promise<void> => {
    const lease = leases.peek(subject);
    leases.invalidate(subject);
    if (lease) await lease.release();
  };
  return {
    seen: (subject: string): boolean => remembered.peek(subject) !== undefined,
    remember: (subject: string): void => void remembered.set(subject, true, options.ttlMs),
    /** The lease across instances: held (kept here), taken by another, or no Redis to ask. */
    async lease(subject: string, lock: LeaseLock | null): Promise<"held" | "taken" | "unavailable"> {
      const lease = lock ? await lock.acquire(`${options.claimPrefix}${subject}`, options.ttlMs) : "unavailable";
      if (lease === "taken" || lease === "unavailable") return lease;
      leases.set(subject, lease, options.ttlMs);
      return "held";
    },
    forgetHere: (subject: string): void => remembered.invalidate(subject),
    /** The lease handed back (only while it still holds this process's token, never a newer one). */
    release,
  };
}

/**
 * Delivery ids already acted on. Kept in this process's memory and, when `LEGACY_QUOTA_KV` is
 * bound, in that store too, so every broker instance sees them. A store that is down costs only
 * the cross-instance view (the store's calls never throw). Ids in flight are claimed so two
 * concurrent redeliveries act once: in this process by a set of ids, across instances (a Redis
 * `LEGACY_QUOTA_KV`) by the lease; a store's get-then-set alone would let two instances both act
 * on copies that arrive together. Redis unavailable: the claim falls back to the store's view.
 */
export function createDeliveryLog(options: { now: () => number; limit?: number }) {
  const log = createClaimLog({ now: options.now, ttlMs: DELIVERY_TTL_MS, limit: options.limit ?? DELIVERY_LIMIT, claimPrefix: "tokensmith-deliveries:claim:" });
  /** Bounded by the requests under way. */
  const inFlight = new Set<string>();
  const key = (id: string) => `delivery:${id}`;

  return {
    /** Only GitHub's GUID-like ids are tracked; anything else is acted on as if new. */
    usable(id: string | undefined): id is string {
      return typeof id === "string" && DELIVERY_ID.test(id);
    },
    /** Claims the id for this request; false when it was acted on within the hour or is being acted on now. */
    async claim(id: string, store: KeyValueStore | null, lock: LeaseLock | null = null): Promise<boolean> {
      if (inFlight.has(id) || log.seen(id)) return false;
      inFlight.add(id);
      const seen = () => {
        inFlight.delete(id);
        log.remember(id);
        return false;
      };
      const lease = await log.lease(id, lock);
      if (lease === "taken") return seen();
      if (lease === "held") return true;
      if (store && (await store.get<number>(key(id))) !== undefined) return seen();
      return true;
    },
    /** The claimed delivery was acted on: remember it for an hour. */
    async done(id: string, store: KeyValueStore | null): Promise<void> {
      inFlight.delete(id);
      log.remember(id);
      if (store) await store.set(key(id), options.now(), DELIVERY_TTL_MS);
    },
    /** A delivery whose queued work failed before acting: forgotten, so a redelivery tries again. */
    async forget(id: string, store: KeyValueStore | null): Promise<void> {
      log.forgetHere(id);
      if (store) await store.set(key(id), options.now(), 1);
      await log.release(id);
    },
    /** The claimed delivery failed before acting: a redelivery may try again. */
    release(id: string): void {
      inFlight.delete(id);
      void log.release(id);
    },
  };
}

/**
 * Push bodies (or, with another `claimPrefix`, check runs' heads) already acted on: the
 * check-and-mark in memory happens before any await, so two copies reaching this process together
 * act once; two instances that get copies at once act once by the lease.
 */
export function createBodyDigestLog(options: { now: () => number; limit?: number; claimPrefix?: string }) {
  // Another prefix keeps another kind of subject (the check runs' heads) apart in the shared Redis.
  const log = createClaimLog({ now: options.now, ttlMs: BODY_DIGEST_TTL_MS, limit: options.limit ?? BODY_LIMIT, claimPrefix: options.claimPrefix ?? "tokensmith-deliveries:body:" });
  return {
    /** True the first time a body is seen within the day (this request acts on it); false for a replay. */
    async claim(digest: string, lock: LeaseLock | null = null): Promise<boolean> {
      if (log.seen(digest)) return false;
      log.remember(digest);
      return (await log.lease(digest, lock)) !== "taken";
    },
    /** The push's work failed before acting: forgotten here and in Redis, so the platform's redelivery acts. */
    async forget(digest: string): Promise<void> {
      log.forgetHere(digest);
      await log.release(digest);
    },
  };
}
