import { importJWK, type JWK } from "jose";

type VerifyKey = Awaited<ReturnType<typeof importJWK>>;

/** An issuer's key set as the broker holds it: the JWKS as published and its usable RS256 keys. */
export interface KeySet {
  jwks: { keys: JWK[] };
  keys: Array<{ kid: string | undefined; key: VerifyKey }>;
  /** When the fetch that produced it started (a snapshot keeps its original fetch's time). */
  fetchedAt: number;
  source: "network" | "snapshot";
  /** Which of this process's fetches produced it (1, 2, …); 0 for a snapshot. */
  fetchNumber: number;
}

export type KeyPick = { key: VerifyKey } | { reason: "kid_not_found" | "key_ambiguous" };

/** The RS256 signing keys of a JWKS; throws when it has none (the set is then unusable). */
export async function importKeySet(jwks: unknown, fetchedAt: number, source: KeySet["source"], fetchNumber: number): Promise<KeySet> {
  const list = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(list)) throw new Error("key set has no keys array");
  const keys: KeySet["keys"] = [];
  for (const jwk of list as JWK[]) {
    // Only RSA signing keys can verify an RS256 token; anything else is skipped, not fatal.
    if (jwk?.kty !== "RSA" || (jwk.use !== undefined && jwk.use !== "sig")) continue;
    if (jwk.alg !== undefined && jwk.alg !== "RS256") continue;
    try {
      const key = await importJWK({ ...jwk, alg: "RS256", ext: false }, "RS256");
      keys.push({ kid: typeof jwk.kid === "string" ? jwk.kid : undefined, key });
    } catch {
      // A malformed key in the set does not invalidate the others.
    }
  }
  if (keys.length === 0) throw new Error("key set has no usable RS256 key");
  return { jwks: { keys: list as JWK[] }, keys, fetchedAt, source, fetchNumber };
}

/** The key a token names by `kid`, or its only key when it names none. */
export function pickKey(set: KeySet, kid: string | undefined): KeyPick {
  if (kid !== undefined) {
    const found = set.keys.find((k) => k.kid === kid);
    return found ? { key: found.key } : { reason: "kid_not_found" };
  }
  if (set.keys.length === 1) return { key: set.keys[0]!.key };
  return { reason: "key_ambiguous" };
}
