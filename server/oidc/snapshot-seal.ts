import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import type { KeyValueStore } from "../kv/key-value-store.js";

/**
 * The integrity of the key-set snapshot in SERVICE_JWKS_CACHE. Whoever can write that store could
 * otherwise plant a key and forge OIDC tokens while the issuer is unreachable; so every snapshot
 * carries an HMAC-SHA256 tag, keyed by a key every broker instance already shares (derived from
 * the main App private key), and one whose tag does not check is never used.
 */
export interface SnapshotBinding {
  store: KeyValueStore;
  /** From `deriveSnapshotKey`. Never logged. */
  sealKey: Buffer;
}

/** What the store holds: the key set as the JSON text that was fetched, and its tag. */
export interface SealedSnapshot {
  v: 1;
  issuer: string;
  fetchedAt: number;
  jwks: string;
  tag: string;
}

const LABEL = "tokensmith jwks snapshot v1";

/**
 * HKDF-SHA256 (RFC 5869) over the App private key's PKCS#8 PEM (the same text on every instance,
 * whatever form the setting used), with a fixed label: a key for this purpose only, from which
 * the App key cannot be recovered. Rotating the App key changes it, and so invalidates every
 * snapshot until the next successful fetch rewrites it.
 */
export function deriveSnapshotKey(appPrivateKeyPem: string): Buffer {
  return Buffer.from(hkdfSync("sha256", appPrivateKeyPem, LABEL, LABEL, 32));
}

/** The tag covers the issuer, the fetch time and the key set, in one unambiguous serialisation. */
function tagOf(sealKey: Buffer, issuer: string, fetchedAt: number, jwks: string): Buffer {
  return createHmac("sha256", sealKey).update(JSON.stringify([LABEL, issuer, fetchedAt, jwks])).digest();
}

export function sealSnapshot(sealKey: Buffer, snapshot: { issuer: string; fetchedAt: number; jwks: unknown }): SealedSnapshot {
  const jwks = JSON.stringify(snapshot.jwks);
  const tag = tagOf(sealKey, snapshot.issuer, snapshot.fetchedAt, jwks).toString("base64url");
  return { v: 1, issuer: snapshot.issuer, fetchedAt: snapshot.fetchedAt, jwks, tag };
}

/**
 * The snapshot's fetch time and key set if `stored` is a snapshot sealed with `sealKey` for
 * `issuer`; null for anything else (an old unsealed snapshot, another issuer's, a planted one).
 */
export function openSnapshot(sealKey: Buffer, stored: unknown, issuer: string): { fetchedAt: number; jwks: unknown } | null {
  const s = stored as Partial<SealedSnapshot> | null;
  if (typeof s !== "object" || s === null || s.v !== 1 || s.issuer !== issuer) return null;
  if (typeof s.fetchedAt !== "number" || !Number.isFinite(s.fetchedAt) || typeof s.jwks !== "string" || typeof s.tag !== "string") return null;
  const expected = tagOf(sealKey, issuer, s.fetchedAt, s.jwks);
  const given = Buffer.from(s.tag, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    return { fetchedAt: s.fetchedAt, jwks: JSON.parse(s.jwks) as unknown };
  } catch {
    return null;
  }
}
