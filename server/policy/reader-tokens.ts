// The broker's own contents-read installation token, one per installation, for reading policy
// files (DESIGN.md "Cost"). Never handed to a caller, never logged, never put in a shared store
// (memory only). Kept until ten minutes before it expires (the platform's last an hour); jobs that
// arrive together share one mint, as cold installation lookups are shared.

/** A reader token is renewed when less than this is left of it. */
export const READER_RENEW_BEFORE_MS = 10 * 60_000;

export interface ReaderToken {
  token: string;
  expiresAtMs: number;
}

export function createReaderTokens(options: { now: () => number; maxEntries?: number }) {
  const tokens = new Map<string, ReaderToken>();
  const inFlight = new Map<string, Promise<ReaderToken>>();
  const max = options.maxEntries ?? 10_000;
  return {
    key: (apiBase: string, appId: string, installationId: number) => `${apiBase}\u0000${appId}\u0000${installationId}`,
    /** The kept token, or `mint()` run once for every caller waiting on this key. A failure is not kept. */
    async get(key: string, mint: () => Promise<ReaderToken>): Promise<ReaderToken> {
      const kept = tokens.get(key);
      if (kept && kept.expiresAtMs - options.now() > READER_RENEW_BEFORE_MS) return kept;
      let running = inFlight.get(key);
      if (!running) {
        running = mint()
          .then((fresh) => {
            if (tokens.size >= max) tokens.delete(tokens.keys().next().value as string);
            tokens.set(key, fresh);
            return fresh;
          })
          .finally(() => inFlight.delete(key));
        inFlight.set(key, running);
      }
      return running;
    },
    /**
     * The installation's repositories or permissions changed (an `installation` or
     * `installation_repositories` delivery): a token minted before covers only the old set, so a
     * newly added `.github` repository would read as "no owner policy" until it expired.
     */
    dropInstallation(installationId: number): void {
      const suffix = `\u0000${installationId}`;
      for (const key of [...tokens.keys()]) if (key.endsWith(suffix)) tokens.delete(key);
    },
    /** The platform refused the token (401): the next read mints another. */
    drop(key: string, token: string): void {
      if (tokens.get(key)?.token === token) tokens.delete(key);
    },
  };
}

export type ReaderTokens = ReturnType<typeof createReaderTokens>;
