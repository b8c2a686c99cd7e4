import { hash } from "node:crypto";
import { createLoadingCache } from "../cache/loading-cache.js";

// Whose points budget a platform call spends (GitHub's secondary limits are "per App or
// installation"): a call made with the App JWT spends the App's; a call made with an installation
// token spends that installation's. The broker knows which installation a token belongs to because
// it minted the token: every mint answer (the lean platform client's, which makes every mint) is
// noted here (by the token's SHA-256, never the token itself) until the token expires, on the cache
// primitive (docs/design.md#caches).

/** Notes kept at most; past it the oldest go (a token the broker no longer uses needs none). */
const MAX_NOTED_TOKENS = 20_000;
/**
 * A token's note outlives its `expires_at` by this much: read on the broker's clock, which may be
 * behind the platform's, a call the platform still takes stays on its installation's budget.
 */
const CLOCK_SKEW_GRACE_MS = 60 * 60_000;
/** An App JWT lives at most 10 minutes (the platform's limit). */
const APP_JWT_LIFETIME_MS = 10 * 60_000;
const DAY_MS = 24 * 60 * 60_000;

export interface PrincipalRegistry {
  /** The principal of a call sent with this Authorization header; null: no budget (unauthenticated). */
  principalOf(authorization: string | undefined): string | null;
  /**
   * The App a principal belongs to (`app:<id>`), whose secondary limits it shares: an App JWT's
   * own; an installation's as noted at its mint; any other principal is taken as its own.
   */
  appOf(principal: string): string;
  /**
   * A mint on this installation answered 201 with `answer` (parsed): note its token's installation,
   * and the installation's App (`app`, the mint's principal) when known.
   */
  noteMint(installationId: string, answer: unknown, app?: string | null): void;
  readonly noted: number;
}

export function createPrincipalRegistry(now: () => number): PrincipalRegistry {
  /** SHA-256 of a token → its installation. */
  const tokens = createLoadingCache<string>({ max: MAX_NOTED_TOKENS, now });
  /** App JWT → its App (the JWT is reused for ~9 minutes, so this stays tiny). */
  const jwts = createLoadingCache<string>({ max: 16, now });
  /** `installation:<id>` → its App, from the mints (one entry per installation the broker minted for). */
  const apps = createLoadingCache<string>({ max: MAX_NOTED_TOKENS, now });

  return {
    get noted() {
      return tokens.size;
    },
    principalOf(authorization) {
      const credential = credentialOf(authorization);
      if (credential === null) return null;
      if (isJwt(credential)) {
        let app = jwts.peek(credential);
        if (app === undefined) {
          app = `app:${issuerOf(credential)}`;
          jwts.set(credential, app, APP_JWT_LIFETIME_MS);
        }
        return app;
      }
      const hash = sha256(credential);
      const installationId = tokens.peek(hash);
      // A token the broker did not mint (none today) is a budget of its own.
      return installationId !== undefined ? `installation:${installationId}` : `token:${hash}`;
    },
    appOf(principal) {
      if (principal.startsWith("app:")) return principal;
      return apps.peek(principal) ?? principal;
    },
    noteMint(installationId, answer, app) {
      const { token, expires_at } = (answer ?? {}) as { token?: unknown; expires_at?: unknown };
      if (typeof token !== "string" || token === "") return;
      // Noted again at each mint: a day is longer than any token of the installation lives.
      if (app?.startsWith("app:")) apps.set(`installation:${installationId}`, app, DAY_MS);
      const parsed = typeof expires_at === "string" ? Date.parse(expires_at) : NaN;
      const expiresAt = Number.isFinite(parsed) ? parsed : now() + 3_600_000;
      tokens.set(sha256(token), String(installationId), expiresAt - now() + CLOCK_SKEW_GRACE_MS);
    },
  };
}

/** The credential of `Bearer x` or `token x`; null without one. */
function credentialOf(authorization: string | undefined): string | null {
  if (!authorization) return null;
  const space = authorization.indexOf(" ");
  const credential = (space < 0 ? authorization : authorization.slice(space + 1)).trim();
  return credential === "" ? null : credential;
}

function isJwt(credential: string): boolean {
  // Exactly two dots, counted without splitting the JWT into three strings on every platform call.
  if (!credential.startsWith("eyJ")) return false;
  const first = credential.indexOf(".");
  const second = first < 0 ? -1 : credential.indexOf(".", first + 1);
  return second >= 0 && credential.indexOf(".", second + 1) < 0;
}

/** The App id a JWT names (its `iss`); our own JWT, so no verification is needed to sort it. */
function issuerOf(jwt: string): string {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString("utf8")) as { iss?: unknown };
    return typeof payload.iss === "string" || typeof payload.iss === "number" ? String(payload.iss) : "unknown";
  } catch {
    return "unknown";
  }
}

function sha256(text: string): string {
  // One-shot crypto.hash: no Hash object per mint and per installation-token call (issue 28).
  return hash("sha256", text, "base64url");
}

/** A call's points (GitHub: GET, HEAD, OPTIONS 1, any other method 5). */
export function pointsOf(method: string): number {
  const upper = method.toUpperCase();
  return upper === "GET" || upper === "HEAD" || upper === "OPTIONS" ? 1 : 5;
}

/** The Authorization header of a fetch's `init.headers`, whatever shape they come in. */
export function authorizationOf(headers: RequestInit["headers"]): string | undefined {
  if (!headers) return undefined;
  if (headers instanceof Headers) return headers.get("authorization") ?? undefined;
  if (Array.isArray(headers)) return headers.find((entry) => entry[0]?.toLowerCase() === "authorization")?.[1];
  const record = headers as Record<string, string>;
  if (record.authorization !== undefined) return record.authorization;
  for (const name of Object.keys(record)) if (name.toLowerCase() === "authorization") return record[name];
  return undefined;
}
