import type { RepoReleases } from "../../shared/types.js";
import type { KeyValueStore } from "../kv/key-value-store.js";

/** Keyv namespace of the aggregate in LEGACY_QUOTA_KV. */
export const AGGREGATE_NAMESPACE = "tokensmith-releases";

/** An aggregate missing an installation is kept this long at most, so a passing failure heals soon. */
export const PARTIAL_TTL_SECONDS = 60;

export interface StoredAggregate {
  generated_at: string;
  repos: RepoReleases[];
  truncated: boolean;
  /** An installation failed during the crawl (not just a cap). */
  partial: boolean;
}

/**
 * Cache (README "Caches"): one entry per platform, App and pair of caps (changing a cap is a
 * different aggregate), versioned so a future shape never reads an old one.
 */
export function aggregateKey(input: { apiBase: string; appId: string; maxInstallations: number; maxRepositories: number }): string {
  return `releases:v1:${input.apiBase}:${input.appId}:${input.maxInstallations}:${input.maxRepositories}`;
}

export function lifetimeSeconds(entry: Pick<StoredAggregate, "partial">, ttlSeconds: number): number {
  return entry.partial ? Math.min(ttlSeconds, PARTIAL_TTL_SECONDS) : ttlSeconds;
}

/**
 * A usable cached aggregate, or undefined. Freshness is judged from `generated_at` and today's
 * RELEASES_CACHE_TTL_SECONDS (a lowered TTL applies at once), besides the store's own expiry.
 */
export async function readAggregate(store: KeyValueStore, key: string, now: number, ttlSeconds: number): Promise<StoredAggregate | undefined> {
  const entry = await store.get<StoredAggregate>(key);
  if (!isAggregate(entry)) return undefined;
  const generated = Date.parse(entry.generated_at);
  if (!Number.isFinite(generated) || now >= generated + lifetimeSeconds(entry, ttlSeconds) * 1000 || generated > now + 60_000) return undefined;
  return entry;
}

export async function writeAggregate(store: KeyValueStore, key: string, entry: StoredAggregate, ttlSeconds: number): Promise<void> {
  await store.set(key, entry, lifetimeSeconds(entry, ttlSeconds) * 1000);
}

function isAggregate(value: unknown): value is StoredAggregate {
  const entry = value as Partial<StoredAggregate> | undefined;
  return (
    typeof entry === "object" && entry !== null &&
    typeof entry.generated_at === "string" && Array.isArray(entry.repos) &&
    typeof entry.truncated === "boolean" && typeof entry.partial === "boolean"
  );
}
