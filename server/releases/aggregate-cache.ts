import type { RepoReleases } from "../../shared/types.js";
import type { KeyValueStore } from "../kv/key-value-store.js";

/** Keyv namespace of the aggregate in LEGACY_QUOTA_KV. */
export const AGGREGATE_NAMESPACE = "tokensmith-releases";

/** An aggregate missing an installation is kept this long at most, so a passing failure heals soon. */
const PARTIAL_TTL_SECONDS = 60;

export interface StoredAggregate {
  generated_at: string;
  repos: RepoReleases[];
  truncated: boolean;
  /** An installation failed during the crawl (not just a cap). */
  partial: boolean;
}

/**
 * Cache (docs/operations.md#caches): one entry per platform, App and pair of caps (changing a cap is a
 * different aggregate), versioned so a future shape never reads an old one.
 */
export function aggregateKey(input: { apiBase: string; appId: string; maxInstallations: number; maxRepositories: number }): string {
  return `releases:v1:${input.apiBase}:${input.appId}:${input.maxInstallations}:${input.maxRepositories}`;
}

function lifetimeSeconds(entry: Pick<StoredAggregate, "partial">, ttlSeconds: number): number {
  return entry.partial ? Math.min(ttlSeconds, PARTIAL_TTL_SECONDS) : ttlSeconds;
}

/**
 * A usable cached aggregate, or undefined. Freshness is judged from `generated_at` and today's
 * RELEASES_CACHE_TTL_SECONDS (a lowered TTL applies at once), besides the store's own expiry.
 */
export async function readAggregate(store: KeyValueStore, key: string, now: number, ttlSeconds: number): Promise<StoredAggregate | undefined> {
  const last = await readLastAggregate(store, key, now, ttlSeconds, 0);
  return last?.fresh ? last.entry : undefined;
}

/** The last aggregate stored, fresh or stale, and its age. */
interface LastAggregate {
  entry: StoredAggregate;
  /** Within its lifetime (RELEASES_CACHE_TTL_SECONDS, 60 s for a partial one). */
  fresh: boolean;
  /** Milliseconds since `generated_at` (0 for one stamped slightly ahead of this clock). */
  ageMs: number;
}

/**
 * The last aggregate stored, or undefined: fresh within its lifetime, stale for `staleSeconds`
 * after it (RELEASES_STALE_SECONDS), gone beyond that. Judged from `generated_at` and today's
 * settings (lowered values apply at once); one stamped more than a minute ahead is not trusted.
 */
export async function readLastAggregate(store: KeyValueStore, key: string, now: number, ttlSeconds: number, staleSeconds: number): Promise<LastAggregate | undefined> {
  const entry = await store.get<StoredAggregate>(key);
  if (!isAggregate(entry)) return undefined;
  const generated = Date.parse(entry.generated_at);
  if (!Number.isFinite(generated) || generated > now + 60_000) return undefined;
  const expires = generated + lifetimeSeconds(entry, ttlSeconds) * 1000;
  if (now >= expires + staleSeconds * 1000) return undefined;
  return { entry, fresh: now < expires, ageMs: Math.max(0, now - generated) };
}

/** Stored for its lifetime and the stale window after it (the store forgets it then). */
export async function writeAggregate(store: KeyValueStore, key: string, entry: StoredAggregate, ttlSeconds: number, staleSeconds = 0): Promise<void> {
  await store.set(key, entry, (lifetimeSeconds(entry, ttlSeconds) + staleSeconds) * 1000);
}

function isAggregate(value: unknown): value is StoredAggregate {
  const entry = value as Partial<StoredAggregate> | undefined;
  return (
    typeof entry === "object" && entry !== null &&
    typeof entry.generated_at === "string" && Array.isArray(entry.repos) &&
    typeof entry.truncated === "boolean" && typeof entry.partial === "boolean"
  );
}
