import { hash } from "node:crypto";
import { createLoadingCache } from "../cache/loading-cache.js";
import type { LeaseLock } from "../kv/lease-lock.js";
import { CLOCK_TOLERANCE_SECONDS } from "../oidc/check-claims.js";

// One OIDC token mints once (docs/security.md "Replayed OIDC tokens"): a verified token's `jti`
// is claimed for as long as the token could still verify (`exp` + the clock tolerance), in this
// process's memory and, when a shared store is configured, in its Redis with `SET key NX PX`, so every
// broker instance sees the claim. A replay (a second POST with the same token, here or on another
// instance) finds it taken. Without this, one leaked or looping token could spend the App's mint
// budget: 32 connections replaying one token for 10 s minted 176 tokens (issue 37).

/** Claims remembered in memory at most: beyond it the oldest are dropped first (Redis, when bound, still holds them). */
const MEMORY_CLAIMS_LIMIT = 100_000;

/** A claim this request holds: handed back when the request failed before a mint was sent. */
export interface HeldClaim {
  release(): Promise<void>;
}

/** Where the instances share their claims: a lease lock on the shared store, and its keys' prefix. */
export interface SharedClaims {
  lock: LeaseLock;
  /** Keys are `<keyPrefix>:<id>`. */
  keyPrefix: string;
}

export interface OidcTokenClaims {
  /**
   * Claims `id` until `untilMs`; "replayed" when it is held already (here, or in Redis by any
   * instance). Redis that does not answer costs only the cross-instance view (the lock logs it).
   */
  claim(id: string, untilMs: number, shared: SharedClaims | null): Promise<HeldClaim | "replayed">;
  /** Claims held in memory now (for tests and metrics). */
  size(): number;
}

/**
 * The id a token is claimed by: its issuer and `jti` (GitHub always sends one, a UUID), hashed so
 * a key's length and characters are bounded whatever the claim holds. A token without a string
 * `jti` is claimed by the SHA-256 of the whole token: RS256 signatures are deterministic, so the
 * same token is the same id, and no other token can have it.
 */
export function claimIdOf(claims: { iss: string; jti?: unknown }, token: string): string {
  if (typeof claims.jti === "string" && claims.jti !== "") return hash("sha256", `${claims.iss}\u0000${claims.jti}`, "hex");
  return hash("sha256", `token\u0000${token}`, "hex");
}

/** When the claim may end: the token's `exp` plus the tolerance within which it still verifies. */
export function claimUntilMs(exp: number): number {
  return (exp + CLOCK_TOLERANCE_SECONDS) * 1000;
}

export function createOidcTokenClaims(options: { now: () => number; limit?: number }): OidcTokenClaims {
  const limit = options.limit ?? MEMORY_CLAIMS_LIMIT;
  // id → the claim's holder (so a late release never ends a newer holder's claim), kept until the
  // claim may end, on the cache primitive (docs/design.md#caches): full, the oldest claim goes first.
  const held = createLoadingCache<object>({ max: limit, now: options.now });

  const heldNow = (id: string): boolean => held.peek(id) !== undefined;

  return {
    async claim(id, untilMs, shared) {
      if (heldNow(id)) return "replayed";
      const ttlMs = Math.max(1, Math.ceil(untilMs - options.now()));
      // Taken in memory before Redis is asked: concurrent replays in this process wait for nothing.
      const holder = {};
      held.set(id, holder, untilMs - options.now());
      const lease = shared ? await shared.lock.acquire(`${shared.keyPrefix}:${id}`, ttlMs) : "unavailable";
      if (lease === "taken") return "replayed"; // another instance holds it; the memory entry keeps later replays here local
      return {
        async release() {
          held.invalidateIf(id, (kept) => kept === holder);
          if (lease !== "unavailable") await lease.release();
        },
      };
    },
    size: () => held.size,
  };
}
