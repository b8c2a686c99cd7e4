import type { ReleasesResponse } from "../../shared/types.js";
import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import type { Settings } from "../settings.js";
import { AGGREGATE_NAMESPACE, aggregateKey, readAggregate, writeAggregate, type StoredAggregate } from "./aggregate-cache.js";
import { crawlReleases } from "./crawl-releases.js";
import { crawlOnceForFleet, lockKey, WAIT_BUDGET_MS } from "./fleet-crawl.js";

/**
 * The aggregate behind GET /releases: from LEGACY_QUOTA_KV when fresh, else from one crawl.
 * Concurrent requests for the same aggregate share one flight (cache read, and crawl if needed);
 * the flights live in this object, which belongs to one app (no module-level state). With a Redis
 * store, the flights of every instance share one crawl through a lease lock (fleet-crawl.ts).
 */
export function createReleasesService(ctx: BrokerContext) {
  const inFlight = new Map<string, Promise<{ aggregate: StoredAggregate; cached: boolean }>>();

  const produce = async (settings: Settings, app: AppCredentials, key: string, requestId?: string) => {
    // Unbound, unusable or unreachable store: null or a miss, never an error (the wrapper bounds it).
    const store = ctx.stores.get(settings.releasesKvUrl, AGGREGATE_NAMESPACE);
    const ttl = settings.releasesCacheTtlSeconds;
    const started = ctx.now();
    if (store) {
      const hit = await readAggregate(store, key, started, ttl);
      if (hit) return { aggregate: hit, cached: true };
    }
    const crawl = async () => {
      const aggregate = await crawlAggregate(settings, app, requestId);
      if (store) await writeAggregate(store, key, aggregate, ttl);
      return aggregate;
    };
    const lock = store ? ctx.stores.lockFor(settings.releasesKvUrl) : null;
    if (!store || !lock) return { aggregate: await crawl(), cached: false };
    const shared = await crawlOnceForFleet({
      lock,
      key: lockKey(key),
      leaseMs: settings.releasesCrawlLeaseSeconds * 1000,
      readCached: () => readAggregate(store, key, ctx.now(), ttl),
      crawl,
      log: ctx.log.child({ request_id: requestId }),
      // Waiting is real time, whatever clock judges freshness.
      now: Date.now,
      deadline: Date.now() + WAIT_BUDGET_MS,
    });
    return { aggregate: shared.value, cached: shared.cached };
  };

  const crawlAggregate = async (settings: Settings, app: AppCredentials, requestId?: string): Promise<StoredAggregate> => {
    const crawl = await crawlReleases({
      ctx,
      platform: settings.main,
      app,
      maxInstallations: settings.releasesMaxInstallations,
      maxRepositories: settings.releasesMaxRepositories,
      requestId,
    });
    return {
      generated_at: new Date(ctx.now()).toISOString(),
      repos: crawl.repos,
      truncated: crawl.truncated,
      partial: crawl.failedInstallations.length > 0,
    };
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
