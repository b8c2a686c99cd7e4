// The claims rules of a signature-checked OIDC token, as a table (server/oidc/check-claims.ts).
// test/token-oidc.test.ts drives the same rules over HTTP with tokens the simulator signs.
import { describe, expect, it } from "@jest/globals";
import { checkClaims, CLOCK_TOLERANCE_SECONDS, MAX_TOKEN_AGE_SECONDS, MAX_TOKEN_LIFETIME_SECONDS } from "../server/oidc/check-claims.js";

const NOW = 1_800_000_000;
const ISSUER = "https://issuer.example";
const rules = { issuer: ISSUER, audiences: ["tokensmith", "release-runner"], nowSeconds: NOW };
const good = { iss: ISSUER, aud: "tokensmith", iat: NOW - 10, nbf: NOW - 10, exp: NOW + 300, repository: "octo-org/app" };
const T = CLOCK_TOLERANCE_SECONDS;
const LIFE = MAX_TOKEN_LIFETIME_SECONDS;
const AGE = MAX_TOKEN_AGE_SECONDS;

describe("checkClaims", () => {
  it.each([
    ["a runner's usual claims", {}],
    ["aud as an array naming an accepted audience", { aud: ["https://github.com/octo-org", "release-runner"] }],
    ["no nbf", { nbf: undefined }],
    ["exp just inside the tolerance", { exp: NOW - T + 1 }],
    ["nbf at the edge of the tolerance", { nbf: NOW + T }],
    ["iat at the edge of the tolerance", { iat: NOW + T }],
    ["repository names with dots, dashes and underscores", { repository: "Octo_Org.x/app-1.2_b" }],
    ["exp − iat at the lifetime bound", { iat: NOW - 10, nbf: undefined, exp: NOW - 10 + LIFE }],
    ["an iat at the age bound", { iat: NOW - AGE, nbf: undefined, exp: NOW - 30 }],
  ])("accepts %s", (_name, change) => {
    expect(checkClaims(withClaims(change), rules)).toBeNull();
  });

  it.each([
    ["no iss", { iss: undefined }, "issuer_mismatch", "iss"],
    ["another iss", { iss: `${ISSUER}/` }, "issuer_mismatch", "iss"],
    ["no aud", { aud: undefined }, "audience_mismatch", "aud"],
    ["an aud not accepted", { aud: "https://github.com/octo-org" }, "audience_mismatch", "aud"],
    ["an aud array without an accepted one", { aud: ["a", "b"] }, "audience_mismatch", "aud"],
    ["an empty aud array", { aud: [] }, "audience_mismatch", "aud"],
    ["a numeric aud", { aud: 1 }, "audience_mismatch", "aud"],
    ["an aud object", { aud: { tokensmith: true } }, "audience_mismatch", "aud"],
    ["no iat", { iat: undefined }, "claim_invalid", "iat"],
    ["no exp", { exp: undefined }, "claim_invalid", "exp"],
    ["an iat string", { iat: String(NOW) }, "claim_invalid", "iat"],
    ["an nbf string", { nbf: String(NOW) }, "claim_invalid", "nbf"],
    ["an nbf of null", { nbf: null }, "claim_invalid", "nbf"],
    ["an exp string", { exp: String(NOW + 300) }, "claim_invalid", "exp"],
    ["nbf past the tolerance", { nbf: NOW + T + 1 }, "token_not_yet_valid", "nbf"],
    ["exp at the tolerance", { exp: NOW - T }, "token_expired", "exp"],
    ["iat past the tolerance", { iat: NOW + T + 1 }, "token_not_yet_valid", "iat"],
    ["an iss with a trailing slash", { iss: `${ISSUER}/` }, "issuer_mismatch", "iss"],
    ["an iss with a leading space", { iss: ` ${ISSUER}` }, "issuer_mismatch", "iss"],
    ["an iss with a trailing tab", { iss: `${ISSUER}\t` }, "issuer_mismatch", "iss"],
    ["an iss in other case", { iss: ISSUER.toUpperCase() }, "issuer_mismatch", "iss"],
    ["exp − iat one second over the lifetime bound", { iat: NOW - 10, nbf: undefined, exp: NOW - 10 + LIFE + 1 }, "token_lifetime_exceeded", "exp"],
    ["an exp of 1e300", { exp: 1e300 }, "token_lifetime_exceeded", "exp"],
    ["an iat one second past the age bound", { iat: NOW - AGE - 1, nbf: undefined, exp: NOW - 30 }, "token_lifetime_exceeded", "iat"],
    ["an iat a year old with a live exp", { iat: NOW - 365 * 86400, nbf: undefined, exp: NOW + 60 }, "token_lifetime_exceeded", "exp"],
    ["no repository", { repository: undefined }, "claim_invalid", "repository"],
    ["a repository without a slash", { repository: "octo-org" }, "claim_invalid", "repository"],
    ["a repository with two slashes", { repository: "octo-org/app/x" }, "claim_invalid", "repository"],
    ["a repository with a space", { repository: "octo-org/ap p" }, "claim_invalid", "repository"],
    ["a numeric repository", { repository: 7 }, "claim_invalid", "repository"],
  ])("refuses %s", (_name, change, reason, claim) => {
    expect(checkClaims(withClaims(change), rules)).toEqual({ reason, claim });
  });

  it.each([
    ["a missing aud before a missing exp", { aud: undefined, exp: undefined }, "audience_mismatch"],
    ["a missing exp before a wrong aud", { aud: "other", exp: undefined }, "claim_invalid"],
    ["a wrong aud before an expired exp", { aud: "other", exp: NOW - 3600 }, "audience_mismatch"],
    ["a future nbf before an expired exp", { nbf: NOW + 3600, exp: NOW - 3600 }, "token_not_yet_valid"],
    ["an expired exp before a bad repository", { exp: NOW - 3600, repository: "x" }, "token_expired"],
    ["an expired exp before an old iat", { iat: NOW - 2 * AGE, exp: NOW - 3600 }, "token_expired"],
    ["a too long lifetime before a bad repository", { exp: NOW + 2 * LIFE, repository: "x" }, "token_lifetime_exceeded"],
  ])("judges %s (jose's order)", (_name, change, reason) => {
    expect(checkClaims(withClaims(change), rules)?.reason).toBe(reason);
  });

  it("does not take an inherited claim for a present one", () => {
    const claims = Object.assign(Object.create({ aud: "tokensmith" }) as Record<string, unknown>, { ...good, aud: undefined });
    delete claims.aud;
    expect(checkClaims(claims, rules)).toEqual({ reason: "audience_mismatch", claim: "aud" });
  });
});

function withClaims(change: Record<string, unknown>): Record<string, unknown> {
  const claims: Record<string, unknown> = { ...good, ...change };
  for (const [name, value] of Object.entries(change)) if (value === undefined) delete claims[name];
  return claims;
}
