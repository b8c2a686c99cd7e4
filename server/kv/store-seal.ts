// Integrity of what the broker keeps in the shared store (SERVICE_JWKS_CACHE). Whoever can write
// that store must not be able to change a decision: a planted key set would let them forge OIDC
// tokens, a policy entry rewritten to "no file" would widen a `contents: read` token to the whole
// grant. So each value the store holds for a decision carries an HMAC-SHA256 tag under a key every
// broker instance already shares (derived from the App private key), and one whose tag does not
// check is never used (docs/security.md "The shared store").
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/**
 * HKDF-SHA256 (RFC 5869) over the App key's seal secret (server/signing/app-key.ts `sealSecretOf`:
 * the PKCS#8 PEM, the same text on every instance whatever form the setting used; for a key in a
 * key store, the key's deterministic PKCS#1 v1.5 signature of a fixed label), with a label per
 * purpose: a key for that purpose only, from which the App key cannot be recovered. Rotating the
 * App key changes it, and so invalidates every sealed value until it is written again.
 */
export function deriveSealKey(sealSecret: string | Buffer, label: string): Buffer {
  return Buffer.from(hkdfSync("sha256", sealSecret, label, label, 32));
}

/** Whether two seal secrets are the same (a memo's check). */
export function sameSealSecret(a: string | Buffer | undefined, b: string | Buffer): boolean {
  if (a === undefined || typeof a !== typeof b) return false;
  return typeof a === "string" ? a === b : a.equals(b as Buffer);
}

/** The tag of `parts`, in one unambiguous serialisation (a JSON array). */
export function sealTag(sealKey: Buffer, parts: readonly unknown[]): string {
  return createHmac("sha256", sealKey).update(JSON.stringify(parts)).digest("base64url");
}

/** Whether `tag` is the tag of `parts` (in constant time). */
export function sealMatches(sealKey: Buffer, parts: readonly unknown[], tag: unknown): boolean {
  if (typeof tag !== "string") return false;
  const expected = Buffer.from(sealTag(sealKey, parts), "base64url");
  const given = Buffer.from(tag, "base64url");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A value as the store holds it: its JSON text, and the tag over the label, the store key and that text. */
interface SealedValue {
  v: 1;
  data: string;
  tag: string;
}

/** Sealed for `key` only: the same value copied under another key (another repository's policy) does not open. */
export function sealValue(sealKey: Buffer, label: string, key: string, value: unknown): SealedValue {
  const data = JSON.stringify(value);
  return { v: 1, data, tag: sealTag(sealKey, [label, key, data]) };
}

/** The value sealed for `key`, or undefined for anything else (unsealed, tampered, moved, another key's). */
export function openValue<T>(sealKey: Buffer, label: string, key: string, stored: unknown): T | undefined {
  const s = stored as Partial<SealedValue> | null | undefined;
  if (typeof s !== "object" || s === null || s.v !== 1 || typeof s.data !== "string") return undefined;
  if (!sealMatches(sealKey, [label, key, s.data], s.tag)) return undefined;
  try {
    return JSON.parse(s.data) as T;
  } catch {
    return undefined;
  }
}
