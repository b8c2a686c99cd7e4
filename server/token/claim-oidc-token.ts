import { BrokerError } from "../../shared/broker-error.js";
import type { StoreRegistry } from "../kv/key-value-store.js";
import type { OidcClaims } from "../oidc/verify-oidc-token.js";
import type { Settings } from "../settings.js";
import { claimIdOf, claimUntilMs, type HeldClaim, type OidcTokenClaims } from "./oidc-token-claims.js";

/** What the claim uses of the broker's context (passed in: docs/design.md#layers). */
export interface ClaimDeps {
  stores: Pick<StoreRegistry, "lockFor">;
  oidcClaims: OidcTokenClaims;
}

/**
 * Claims a verified OIDC token's one mint (docs/security.md "Replayed OIDC tokens"): 409
 * oidc_token_replayed when it was claimed before, on this instance or, through the Redis of
 * SERVICE_JWKS_CACHE (else of LEGACY_QUOTA_KV), on any instance that shares it.
 */
export async function claimOidcToken(ctx: ClaimDeps, settings: Settings, claims: OidcClaims, token: string): Promise<HeldClaim> {
  const lock = ctx.stores.lockFor(settings.jwksCacheUrl) ?? ctx.stores.lockFor(settings.releasesKvUrl);
  // checkClaims required a numeric exp: the claim lasts as long as the token could still verify.
  const held = await ctx.oidcClaims.claim(claimIdOf(claims, token), claimUntilMs(claims.exp as number), lock);
  if (held === "replayed") throw new BrokerError("oidc_token_replayed", { detail: claims.jti === undefined ? "token already used" : `jti ${String(claims.jti).slice(0, 64)} already used` });
  return held;
}
