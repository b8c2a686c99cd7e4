// The broker's own contents-read installation token, one per installation, for reading policy
// files (docs/policies.md "Cost and cache"). Never handed to a caller, never logged, never put in a
// shared store (memory only). Kept until ten minutes before it expires (the platform's last an
// hour); jobs that arrive together share one mint. On the cache primitive (server/cache/loading-cache.ts): a
// mint under way when an `installation` or `installation_repositories` delivery drops the
// installation's token is used by the reads that waited for it, never kept.
import { createLoadingCache } from "../cache/loading-cache.js";
import type { MintedToken } from "../installation/mint-installation-token.js";

/** A reader token is renewed when less than this is left of it. */
export const READER_RENEW_BEFORE_MS = 10 * 60_000;

/**
 * A reader that does not cover a repository which may simply not be in the installation (the
 * owner's `.github`, another repository a request names) is replaced once it is older than this:
 * such a repository added later is read within this long (plus the policy cache), and an
 * installation on selected repositories without `.github` costs one more reader mint (5 of the
 * App's points) per 10 minutes while its jobs come, not one per policy read.
 */
export const READER_RECHECK_MS = 10 * 60_000;

export interface ReaderToken {
  token: string;
  expiresAtMs: number;
  /**
   * The repositories the token can read, lower-cased names, as its mint answer listed them: an
   * installation on selected repositories gets a token over the selection *at mint time*, so a
   * repository added later is not in it (and reads 404, which must not count as "no policy").
   * "all": the installation is on all repositories (the answer lists none), new ones included.
   */
  covers: ReadonlySet<string> | "all";
  /** When it was minted (the broker's clock). */
  mintedAtMs: number;
}

export function createReaderTokens(options: { now: () => number; maxEntries?: number }) {
  const tokens = createLoadingCache<ReaderToken>({ max: options.maxEntries ?? 10_000, now: options.now });
  const keepFor = (reader: ReaderToken) => reader.expiresAtMs - READER_RENEW_BEFORE_MS - options.now();
  return {
    key: (apiBase: string, appId: string, installationId: number) => `${apiBase}\u0000${appId}\u0000${installationId}`,
    /** The kept token, or `mint()` run once for every caller waiting on this key. A failure is not kept. */
    get(key: string, mint: () => Promise<ReaderToken>): Promise<ReaderToken> {
      return tokens.get(key, mint, keepFor);
    },
    /**
     * The installation's repositories or permissions changed (an `installation` or
     * `installation_repositories` delivery): a token minted before (or being minted) covers only
     * the old set, so a newly added `.github` repository would read as "no owner policy" until it expired.
     */
    dropInstallation(installationId: number): void {
      const suffix = `\u0000${installationId}`;
      tokens.invalidateWhere((key) => key.endsWith(suffix));
    },
    /** The platform refused the token (401), or it does not cover a repository it must: the next read mints another. */
    drop(key: string, token: string): void {
      tokens.invalidateIf(key, (kept) => kept.token === token);
    },
  };
}

/** A reader from its mint's answer, minted at `nowMs`: what it covers is what the answer listed. */
export function readerFromMint(minted: MintedToken, nowMs: number): ReaderToken {
  const expiresAtMs = Date.parse(minted.expires_at);
  const names = minted.repositories?.map((repository) => repository.name?.toLowerCase()).filter((name): name is string => name !== undefined);
  return {
    token: minted.token,
    expiresAtMs: Number.isFinite(expiresAtMs) ? expiresAtMs : nowMs + 30 * 60_000,
    covers: names === undefined ? "all" : new Set(names),
    mintedAtMs: nowMs,
  };
}

/** Whether `reader` can read the repository named `name` (case as the platform ignores it). */
export function readerCovers(reader: ReaderToken, name: string): boolean {
  return reader.covers === "all" || reader.covers.has(name.toLowerCase());
}

