import { compactVerify, type JWTPayload } from "jose";
import { BrokerError } from "../../shared/broker-error.js";
import type { OidcReason } from "../../shared/error-codes.js";
import { checkClaims } from "./check-claims.js";
import type { KeySetSource } from "./key-set-source.js";
import type { SnapshotBinding } from "./snapshot-seal.js";

/** The claims of a CI job's OIDC token that the broker reads (all GitHub custom claims are strings). */
export interface OidcClaims extends JWTPayload {
  iss: string;
  repository: string;
  sub?: string;
  ref?: string;
  run_id?: string;
  workflow_ref?: string;
  actor?: string;
}

interface TrustedIssuer<P> {
  issuer: string;
  keys: KeySetSource;
  /** What the issuer maps to (the platform to mint on). */
  platform: P;
}

interface VerifyInput<P> {
  token: string;
  issuers: ReadonlyArray<TrustedIssuer<P>>;
  audiences: readonly string[];
  now: () => number;
  /** SERVICE_JWKS_CACHE and the key that seals it; null: no snapshot is read or written. */
  snapshot: SnapshotBinding | null;
}

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

function refuse(reason: OidcReason, detail?: string): never {
  throw new BrokerError("invalid_oidc_token", { reason, detail });
}

/**
 * Verifies a CI-job OIDC token. The issuer is pinned from the (unverified) `iss` *before* a key set
 * is chosen, so a forged `iss` can only select a trusted issuer's own keys; the raw claim must equal
 * a configured issuer exactly (the setting is normalised, the token's claim never is). Header
 * fields that point at keys (`jku`, `x5u`, `jwk`) are never followed. RS256 only.
 */
export async function verifyOidcToken<P>(input: VerifyInput<P>): Promise<{ claims: OidcClaims; trusted: TrustedIssuer<P> }> {
  if (!COMPACT_JWS.test(input.token)) refuse("malformed_token");
  const [headerPart, payloadPart] = input.token.split(".") as [string, string];
  const header = decodeSegment(headerPart) as { alg?: unknown; kid?: unknown } | undefined;
  const unverified = decodeSegment(payloadPart) as JWTPayload | undefined;
  if (!header || !unverified) refuse("malformed_token");
  if (header.alg !== "RS256") refuse("alg_unsupported");
  if (typeof unverified.iss !== "string") refuse("issuer_mismatch");
  const trusted = input.issuers.find((candidate) => candidate.issuer === unverified.iss);
  if (!trusted) refuse("issuer_mismatch");
  if (header.kid !== undefined && typeof header.kid !== "string") refuse("malformed_token");

  const pick = await trusted.keys.getKey(header.kid, input.snapshot);
  if ("reason" in pick) refuse(pick.reason);

  // The signature covers the header and payload segments exactly as sent, and the claims below are
  // the ones decoded from that payload segment: once it verifies, they are the issuer's own. jose
  // checks it (RS256 only; a `crit` header it does not understand, a key under 2048 bits or a
  // malformed signature segment are refused). A hand-made node:crypto check did not win the 10 %
  // a fast path needs (docs/operations.md#fast-paths), so jose's is the only one.
  try {
    await compactVerify(input.token, pick.key, { algorithms: ["RS256"] });
  } catch (error) {
    refuse(reasonFor(error));
  }
  const broken = checkClaims(unverified, { issuer: trusted.issuer, audiences: input.audiences, nowSeconds: Math.floor(input.now() / 1000) });
  if (broken) refuse(broken.reason, `${broken.claim} claim`);
  trusted.keys.noteVerified(input.snapshot);
  return { claims: unverified as OidcClaims, trusted };
}

/** A JWS segment as a JSON object, or undefined. (Read before the issuer is pinned; verified after.) */
function decodeSegment(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(UTF8.decode(Buffer.from(segment, "base64url")));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** jose errors carry a stable `code`; branch on it, never on the message. */
function reasonFor(error: unknown): OidcReason {
  switch ((error as { code?: string } | null)?.code) {
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "signature_invalid";
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return "alg_unsupported";
    case "ERR_JWS_INVALID":
      return "malformed_token";
    default:
      return "unknown";
  }
}
