import type { ReleasesResponse } from "../../shared/types.js";
import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import type { Settings } from "../settings.js";
import { AGGREGATE_NAMESPACE, aggregateKey, readAggregate, writeAggregate, type StoredAggregate } from "./aggregate-cache.js";
import { crawlReleases } from "./crawl-releases.js";

/**
 * The aggregate behind GET /releases: from LEGACY_QUOTA_KV when fresh, else from one crawl.
 * Concurrent requests for the same aggregate share one flight (cache read, and crawl if needed);
 * the flights live in this object, which belongs to one app (no module-level state).
 */
export function createReleasesService(ctx: BrokerContext) {
  const inFlight = new Map<string, Promise<{ aggregate: StoredAggregate; cached: boolean }>>();

  const produce = async (settings: Settings, app: AppCredentials, key: string, requestId?: string) => {
    // Unbound, unusable or unreachable store: null or a miss, never an error (the wrapper bounds it).
    const store = ctx.stores.get(settings.releasesKvUrl, AGGREGATE_NAMESPACE);
    const ttl = settings.releasesCacheTtlSeconds;
    if (store) {
      const hit = await readAggregate(store, key, ctx.now(), ttl);
      if (hit) return { aggregate: hit, cached: true };
    }
    const crawl = await crawlReleases({
      ctx,
      platform: settings.main,
      app,
      maxInstallations: settings.releasesMaxInstallations,
      maxRepositories: settings.releasesMaxRepositories,
      requestId,
    });
    const aggregate: StoredAggregate = {
      generated_at: new Date(ctx.now()).toISOString(),
      repos: crawl.repos,
      truncated: crawl.truncated,
      partial: crawl.failedInstallations.length > 0,
    };
    if (store) await writeAggregate(store, key, aggregate, ttl);
    return { aggregate, cached: false };
  };

  return {
    async releases(settings: Settings, app: AppCredentials, requestId?: string): Promise<ReleasesResponse> {
      const key = aggregateKey({
        apiBase: settings.main.apiBase,
        appId: app.appId,
        maxInstallations: settings.releasesMaxInstallations,
        maxRepositories: settings.releasesMaxRepositories,
      });
      let flight = inFlight.get(key);
      if (!flight) {
        flight = produce(settings, app, key, requestId).finally(() => inFlight.delete(key));
        inFlight.set(key, flight);
      }
      const { aggregate, cached } = await flight;
      return { generated_at: aggregate.generated_at, repos: aggregate.repos, truncated: aggregate.truncated, cached };
    },
  };
}

export type ReleasesService = ReturnType<typeof createReleasesService>;
