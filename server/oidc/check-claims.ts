import type { OidcReason } from "../../shared/error-codes.js";

export const CLOCK_TOLERANCE_SECONDS = 60;
/**
 * Longest `exp − iat` accepted, and the oldest `iat`. The platform's tokens live 5 minutes
 * (docs/design.md#decisions-where-the-contract-was-open); an hour is generous slack for slow runners and skewed clocks, while a token that
 * claims to live for years (or was issued long ago) is refused outright.
 */
export const MAX_TOKEN_LIFETIME_SECONDS = 60 * 60;
export const MAX_TOKEN_AGE_SECONDS = 60 * 60;

const REPOSITORY = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

interface ClaimRules {
  /** The pinned issuer: the raw `iss` claim must be exactly this string (no trimming, no slashes stripped). */
  issuer: string;
  /** Accepted audiences: `aud` (a string, or an array of strings) must name one of them. */
  audiences: readonly string[];
  /** Seconds since the epoch. */
  nowSeconds: number;
}

interface BrokenRule {
  reason: OidcReason;
  /** The claim that broke it (for the log, never the answer). */
  claim: string;
}

/**
 * The claims of a signature-checked OIDC token, judged in the order jose's `jwtVerify` judges them
 * (RFC 7519 §4.1), plus the broker's own rules: `exp` and `iat` required, a 60 s clock tolerance
 * on `exp`, `nbf` and `iat`, a bounded lifetime (`exp − iat` and the age of `iat`, each at most
 * an hour), and a `repository` claim of the form owner/name.
 * Returns the first rule broken, or null when the claims are acceptable.
 */
export function checkClaims(claims: Record<string, unknown>, rules: ClaimRules): BrokenRule | null {
  const broken = (reason: OidcReason, claim: string): BrokenRule => ({ reason, claim });
  if (!Object.hasOwn(claims, "iss")) return broken("issuer_mismatch", "iss");
  if (!Object.hasOwn(claims, "aud")) return broken("audience_mismatch", "aud");
  if (!Object.hasOwn(claims, "iat")) return broken("claim_invalid", "iat");
  if (!Object.hasOwn(claims, "exp")) return broken("claim_invalid", "exp");
  if (claims.iss !== rules.issuer) return broken("issuer_mismatch", "iss");
  if (!namesAudience(claims.aud, rules.audiences)) return broken("audience_mismatch", "aud");

  const { iat, nbf, exp } = claims;
  if (typeof iat !== "number") return broken("claim_invalid", "iat");
  if (nbf !== undefined && typeof nbf !== "number") return broken("claim_invalid", "nbf");
  if (typeof nbf === "number" && nbf > rules.nowSeconds + CLOCK_TOLERANCE_SECONDS) return broken("token_not_yet_valid", "nbf");
  if (typeof exp !== "number") return broken("claim_invalid", "exp");
  if (exp <= rules.nowSeconds - CLOCK_TOLERANCE_SECONDS) return broken("token_expired", "exp");
  if (iat > rules.nowSeconds + CLOCK_TOLERANCE_SECONDS) return broken("token_not_yet_valid", "iat");
  if (exp - iat > MAX_TOKEN_LIFETIME_SECONDS) return broken("token_lifetime_exceeded", "exp");
  if (rules.nowSeconds - iat > MAX_TOKEN_AGE_SECONDS) return broken("token_lifetime_exceeded", "iat");

  if (typeof claims.repository !== "string" || !REPOSITORY.test(claims.repository)) return broken("claim_invalid", "repository");
  return null;
}

function namesAudience(aud: unknown, accepted: readonly string[]): boolean {
  if (typeof aud === "string") return accepted.includes(aud);
  if (Array.isArray(aud)) return accepted.some((name) => aud.includes(name));
  return false;
}
