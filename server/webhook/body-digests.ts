import { createHash } from "node:crypto";
import type { Lease, LeaseLock } from "../kv/lease-lock.js";

/**
 * How long a push body is remembered. `X-GitHub-Delivery` is not covered by the signature, so a
 * captured signed push replayed with a fresh id passes the delivery-id check; its body — signed,
 * and unique per genuine push (its `after`, `head_commit`, `pushed_at`) — is not new. A day
 * covers the platform's own redeliveries (same body, same id) with room to spare.
 */
export const BODY_DIGEST_TTL_MS = 24 * 60 * 60_000;
/** In-process bound: past it the oldest digests are dropped first (the Redis view keeps the day). */
const MEMORY_LIMIT = 50_000;

/** SHA-256 of the raw body, as signed (hex). */
export function bodyDigest(raw: Buffer): string {
  return createHash("sha256").update(raw).digest("hex");
}

/**
 * Push bodies already acted on, for the in-process queue: remembered in this process (bounded)
 * and, when `LEGACY_QUOTA_KV` is a Redis, claimed there with `SET … NX PX 24h` (the lease lock),
 * so two instances that get copies of one body at once act once. Redis unavailable: this
 * process's view alone. The check-and-mark in memory happens before any await, so two copies
 * reaching this process together act once too.
 */
export function createBodyDigestLog(options: { now: () => number; limit?: number; claimPrefix?: string }) {
  const limit = options.limit ?? MEMORY_LIMIT;
  const remembered = new Map<string, number>();
  const leases = new Map<string, Lease>();
  // Another prefix keeps another kind of subject (the check runs' heads) apart in the shared Redis.
  const claimPrefix = options.claimPrefix ?? "tokensmith-deliveries:body:";
  const claimKey = (digest: string) => `${claimPrefix}${digest}`;

  const seen = (digest: string): boolean => {
    const until = remembered.get(digest);
    if (until === undefined) return false;
    if (until > options.now()) return true;
    remembered.delete(digest);
    return false;
  };

  return {
    /** True the first time a body is seen within the day (this request acts on it); false for a replay. */
    async claim(digest: string, lock: LeaseLock | null = null): Promise<boolean> {
      if (seen(digest)) return false;
      remembered.set(digest, options.now() + BODY_DIGEST_TTL_MS);
      while (remembered.size > limit) remembered.delete(remembered.keys().next().value as string);
      const lease = lock ? await lock.acquire(claimKey(digest), BODY_DIGEST_TTL_MS) : "unavailable";
      if (lease === "taken") return false;
      if (lease !== "unavailable") {
        leases.set(digest, lease);
        while (leases.size > limit) leases.delete(leases.keys().next().value as string);
      }
      return true;
    },
    /** The push's work failed before acting: forgotten here and in Redis, so the platform's redelivery acts. */
    async forget(digest: string): Promise<void> {
      remembered.delete(digest);
      const lease = leases.get(digest);
      leases.delete(digest);
      if (lease) await lease.release();
    },
  };
}

export type BodyDigestLog = ReturnType<typeof createBodyDigestLog>;
