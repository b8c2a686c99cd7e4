// The seal of the key-set snapshot (server/oidc/snapshot-seal.ts), as a table: what opens and what
// does not. test/jwks-snapshot.test.ts shows the same over Redis with broker processes.
import { describe, expect, it } from "@jest/globals";
import { deriveSnapshotKey, openSnapshot, sealSnapshot } from "../server/oidc/snapshot-seal.js";

const ISSUER = "https://token.actions.githubusercontent.com";
const key = deriveSnapshotKey("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
const jwks = { keys: [{ kty: "RSA", kid: "k1", n: "n", e: "AQAB" }] };
const sealed = sealSnapshot(key, { issuer: ISSUER, fetchedAt: 1_800_000_000_000, jwks });

describe("snapshot seal", () => {
  it("opens what it sealed, for the same issuer", () => {
    expect(openSnapshot(key, sealed, ISSUER)).toEqual({ fetchedAt: 1_800_000_000_000, jwks });
    expect(openSnapshot(key, JSON.parse(JSON.stringify(sealed)), ISSUER)).toEqual({ fetchedAt: 1_800_000_000_000, jwks });
  });

  it("derives a 32-byte key that depends on the App key", () => {
    expect(key).toHaveLength(32);
    expect(deriveSnapshotKey("another key").equals(key)).toBe(false);
  });

  it.each([
    ["another issuer's snapshot", sealed, `${ISSUER}/`],
    ["a key set changed under the tag", { ...sealed, jwks: JSON.stringify({ keys: [] }) }, ISSUER],
    ["a later fetch time under the tag", { ...sealed, fetchedAt: sealed.fetchedAt + 1 }, ISSUER],
    ["the issuer changed under the tag", { ...sealed, issuer: "https://evil.example" }, "https://evil.example"],
    ["a truncated tag", { ...sealed, tag: sealed.tag.slice(0, 20) }, ISSUER],
    ["no tag", { ...sealed, tag: undefined }, ISSUER],
    ["another version", { ...sealed, v: 2 }, ISSUER],
    ["the unsealed shape of earlier versions", { issuer: ISSUER, jwks, fetchedAt: sealed.fetchedAt }, ISSUER],
    ["a key set that is not text", { ...sealed, jwks }, ISSUER],
    ["null", null, ISSUER],
    ["a string", JSON.stringify(sealed), ISSUER],
  ])("refuses %s", (_name, stored, issuer) => {
    expect(openSnapshot(key, stored, issuer)).toBeNull();
  });

  it("refuses a snapshot sealed under another App key", () => {
    expect(openSnapshot(deriveSnapshotKey("rotated"), sealed, ISSUER)).toBeNull();
  });
});
