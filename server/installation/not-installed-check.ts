import type { SharedLimits } from "../kv/shared-limits.js";
import type { NotInstalledCache } from "./not-installed-cache.js";

/** What the check uses of the broker's context (passed in: docs/design.md#layers). */
export interface NotInstalledDeps {
  notInstalled: NotInstalledCache;
  sharedLimits: () => SharedLimits | null;
}

/** A lookup may follow: tell it how it ended. */
interface NotInstalledMemo {
  /** The lookup answered "not installed": remembered in process, and in the shared store when there is one. */
  remember(): Promise<void>;
}

/**
 * Whether `key` (/token's installation cache key, the claims' ids known) was answered "not
 * installed" less than a lifetime ago: in process first (no round trip), then in the shared store
 * when one is configured (a hit there is kept in process for what is left of it, so a flood of
 * replays asks Redis once per instance). Only the installation cache's misses come here: an
 * installed repository's steady state (a cache hit) never waits for Redis.
 */
export async function checkNotInstalled(ctx: NotInstalledDeps, key: string, ownerId: number): Promise<"not-installed" | NotInstalledMemo> {
  if (ctx.notInstalled.has(key)) return "not-installed";
  // Taken before asking: a drop that comes while the lookup runs keeps its answer out (both levels).
  const generation = ctx.notInstalled.generation;
  const shared = ctx.sharedLimits();
  const seen = shared ? await shared.notInstalled(key, ownerId) : "unavailable";
  if (seen !== "unavailable" && "remainingMs" in seen) {
    ctx.notInstalled.add(key, ownerId, generation, seen.remainingMs);
    return "not-installed";
  }
  const epoch = seen === "unavailable" ? undefined : seen.epoch;
  return {
    async remember() {
      ctx.notInstalled.add(key, ownerId, generation);
      if (shared && epoch !== undefined) await shared.addNotInstalled(key, ownerId, epoch, ctx.notInstalled.ttlMs);
    },
  };
}
