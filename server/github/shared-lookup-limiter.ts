import type { SharedLimits } from "../kv/shared-limits.js";
import { shareOf, type LookupRefusal, type LookupSlot, type OwnerLookupLimiter } from "./owner-lookup-limiter.js";

/**
 * An OwnerLookupLimiter whose share is also held across instances: past the in-process limiter
 * (its lookups in flight and its own window, kept as they are: the fallback when Redis is down), a
 * lookup takes a place in the key's window counter in Redis (fixed windows of `windowMs` by the
 * clock). A lookup that finds the App installed gives its place back, as in process; one refused
 * there is 503 until that window ends. Lookups in flight on another instance hold their places
 * until they settle, so a cold burst of an installed owner spread over instances past the share at
 * once can be refused (rare: the share is 90 a minute with GitHub's 900). Redis not answering
 * within its bound → the in-process limit only (docs/operations.md#caches).
 */
export function withSharedWindow(
  local: OwnerLookupLimiter,
  options: { shared: () => SharedLimits | null; name: string; now: () => number; windowMs: number; pointsPerWindow: () => number; share: number },
): OwnerLookupLimiter {
  const take = async (owner: string): Promise<LookupSlot | LookupRefusal> => {
    const slot = await local.take(owner);
    const shared = "settle" in slot ? options.shared() : null;
    if (!shared) return slot;
    const limit = shareOf(options.pointsPerWindow(), options.share);
    const place = await shared.takeWindow(`${options.name}:${owner}`, limit, options.windowMs, options.now());
    if (place === "unavailable") return slot;
    if ("retryAfterMs" in place) {
      (slot as LookupSlot).settle(true); // not spent here: nothing was asked
      return { retryAfterSeconds: Math.max(1, Math.ceil(place.retryAfterMs / 1000)) };
    }
    let settled = false;
    return {
      settle(foundInstalled) {
        if (settled) return;
        settled = true;
        (slot as LookupSlot).settle(foundInstalled);
        if (foundInstalled) void place.refund();
      },
    };
  };
  // tryTake, used, inFlight: the in-process limiter's (callers take with `take`).
  return { tryTake: local.tryTake, take, used: local.used, inFlight: local.inFlight };
}
