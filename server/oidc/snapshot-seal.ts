import type { KeyValueStore } from "../kv/key-value-store.js";
import { deriveSealKey, sealMatches, sealTag } from "../kv/store-seal.js";

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

/** The snapshot's own key (server/kv/store-seal.ts: HKDF over the App key's seal secret, this label). */
export function deriveSnapshotKey(sealSecret: string | Buffer): Buffer {
  return deriveSealKey(sealSecret, LABEL);
}

/** The tag covers the issuer, the fetch time and the key set, in one unambiguous serialisation. */
const partsOf = (issuer: string, fetchedAt: number, jwks: string) => [LABEL, issuer, fetchedAt, jwks];

export function sealSnapshot(sealKey: Buffer, snapshot: { issuer: string; fetchedAt: number; jwks: unknown }): SealedSnapshot {
  const jwks = JSON.stringify(snapshot.jwks);
  const tag = sealTag(sealKey, partsOf(snapshot.issuer, snapshot.fetchedAt, jwks));
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
  if (!sealMatches(sealKey, partsOf(issuer, s.fetchedAt, s.jwks), s.tag)) return null;
  try {
    return { fetchedAt: s.fetchedAt, jwks: JSON.parse(s.jwks) as unknown };
  } catch {
    return null;
  }
}
