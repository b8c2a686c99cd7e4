import { hash } from "node:crypto";

// Whose points budget a platform call spends (GitHub's secondary limits are "per App or
// installation"): a call made with the App JWT spends the App's; a call made with an installation
// token spends that installation's. The broker knows which installation a token belongs to because
// it minted the token: every mint answer (the lean platform client's, which makes every mint) is
// noted here (by the token's SHA-256, never the token itself) until the token expires.

/** Notes kept at most; past it the oldest go (a token the broker no longer uses needs none). */
export const MAX_NOTED_TOKENS = 20_000;

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
  /** SHA-256 of a token → its installation and expiry (epoch ms). Insertion order ≈ expiry order. */
  const tokens = new Map<string, { installationId: string; expiresAt: number }>();
  /** App JWT → its App (the JWT is reused for ~9 minutes, so this stays tiny). */
  const jwts = new Map<string, string>();
  /** `installation:<id>` → its App, from the mints (one entry per installation the broker minted for). */
  const apps = new Map<string, string>();

  const forgetExpired = () => {
    const at = now();
    for (const [hash, note] of tokens) {
      if (note.expiresAt > at && tokens.size <= MAX_NOTED_TOKENS) break;
      tokens.delete(hash);
    }
  };

  return {
    get noted() {
      return tokens.size;
    },
    principalOf(authorization) {
      const credential = credentialOf(authorization);
      if (credential === null) return null;
      if (isJwt(credential)) {
        let app = jwts.get(credential);
        if (app === undefined) {
          if (jwts.size >= 16) jwts.clear();
          app = `app:${issuerOf(credential)}`;
          jwts.set(credential, app);
        }
        return app;
      }
      const hash = sha256(credential);
      const note = tokens.get(hash);
      // A token the broker did not mint (none today) is a budget of its own.
      return note ? `installation:${note.installationId}` : `token:${hash}`;
    },
    appOf(principal) {
      if (principal.startsWith("app:")) return principal;
      return apps.get(principal) ?? principal;
    },
    noteMint(installationId, answer, app) {
      const { token, expires_at } = (answer ?? {}) as { token?: unknown; expires_at?: unknown };
      if (typeof token !== "string" || token === "") return;
      if (app?.startsWith("app:")) {
        if (apps.size >= MAX_NOTED_TOKENS) apps.clear(); // only past 20,000 installations: they are noted again at their next mint
        apps.set(`installation:${installationId}`, app);
      }
      const expiresAt = typeof expires_at === "string" ? Date.parse(expires_at) : NaN;
      tokens.set(sha256(token), { installationId: String(installationId), expiresAt: Number.isFinite(expiresAt) ? expiresAt : now() + 3_600_000 });
      forgetExpired();
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
