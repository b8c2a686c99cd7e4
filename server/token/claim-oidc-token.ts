import { BrokerError } from "../../shared/broker-error.js";
import type { StoreRegistry } from "../kv/key-value-store.js";
import { sharedStoreAddress } from "../kv/shared-store.js";
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
 * oidc_token_replayed when it was claimed before, on this instance or, through the shared store
 * (the one the shared limits use: docs/operations.md#shared-limits), on any instance that shares it.
 */
export async function claimOidcToken(ctx: ClaimDeps, settings: Settings, claims: OidcClaims, token: string): Promise<HeldClaim> {
  const address = sharedStoreAddress(settings);
  const lock = address && ctx.stores.lockFor(address.url);
  const shared = address && lock ? { lock, keyPrefix: address.claimsPrefix } : null;
  // checkClaims required a numeric exp: the claim lasts as long as the token could still verify.
  const held = await ctx.oidcClaims.claim(claimIdOf(claims, token), claimUntilMs(claims.exp as number), shared);
  if (held === "replayed") throw new BrokerError("oidc_token_replayed", { detail: claims.jti === undefined ? "token already used" : `jti ${String(claims.jti).slice(0, 64)} already used` });
  return held;
}
