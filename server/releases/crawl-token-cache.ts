// The /releases crawl's read-only installation tokens, kept between crawls (docs/operations.md#caches).
//
// A cold crawl mints one token per installation: 5 of the App's 900 REST points a minute each, so
// a refresh of 222 installations would spend 1,110 points, more than GitHub allows in a minute.
// Reusing each token while it has more than REUSE_MARGIN_MS left makes a warm refresh mint
// nothing. The broker never revoked crawl tokens (they are read-only and expire within the hour);
// reuse beats revoking them per crawl, which would cost a DELETE (5 of the installation's points)
// per installation and a new mint next time.
//
// In this process's memory only: never written to a key-value store, never logged. Key: platform
// (API base), App, installation and the permissions asked for (a change in what the installation
// grants asks for another token). Evicted when less than REUSE_MARGIN_MS is left, when a call made
// with the token is refused as unauthenticated (401: revoked, or the installation is gone), and
// when the process ends. Concurrent crawls share one mint per key. On the cache primitive
// (docs/design.md#caches), apart from the policy reader tokens: see there why.

import { createLoadingCache } from "../cache/loading-cache.js";
import type { MintedRepository } from "../installation/mint-installation-token.js";

const REUSE_MARGIN_MS = 10 * 60_000;

export interface CrawlToken {
  token: string;
  /** Taken from the cache rather than minted for this crawl. */
  reused: boolean;
  /**
   * A new token only: the mint answer's `repositories` (what the platform lists for an installation
   * on selected repositories), or null when it had none. A kept token carries none: the
   * installation may have changed since its mint.
   */
  repositories?: readonly MintedRepository[] | null;
}

type Minted = { token: string; expires_at: string; repositories?: readonly MintedRepository[] | null };
/** A mint's answer as kept: what a new token's first users get (`repositories`), and its expiry (epoch ms; NaN: none read, not kept). */
type Kept = { token: string; expiresAt: number; repositories: readonly MintedRepository[] | null };

export interface CrawlTokenCache {
  key(input: { apiBase: string; appId: string; installationId: number; permissions: Record<string, string> }): string;
  /** The kept token for `key` if it has more than REUSE_MARGIN_MS left; else `mint`'s (kept if it will last). */
  tokenFor(key: string, mint: () => Promise<Minted>): Promise<CrawlToken>;
  /** Forget `token` under `key` (only if it is still the one kept there). */
  drop(key: string, token: string): void;
  readonly size: number;
}

export function createCrawlTokenCache(now: () => number, maxEntries = 10_000): CrawlTokenCache {
  const tokens = createLoadingCache<Kept>({ max: maxEntries, now });
  const keepFor = (kept: Kept) => (Number.isFinite(kept.expiresAt) ? kept.expiresAt - now() - REUSE_MARGIN_MS : 0);
  return {
    get size() {
      return tokens.size;
    },
    key({ apiBase, appId, installationId, permissions }) {
      const asked = Object.keys(permissions).sort().map((name) => `${name}=${permissions[name]}`).join(",");
      return JSON.stringify([apiBase, appId, installationId, asked]);
    },
    async tokenFor(key, mint) {
      const hit = tokens.peek(key);
      if (hit) return { token: hit.token, reused: true };
      const minted = await tokens.get(key, async () => {
        const answer = await mint();
        return { token: answer.token, expiresAt: Date.parse(answer.expires_at), repositories: answer.repositories ?? null };
      }, keepFor);
      return { token: minted.token, reused: false, repositories: minted.repositories };
    },
    drop(key, token) {
      tokens.invalidateIf(key, (kept) => kept.token === token);
    },
  };
}
