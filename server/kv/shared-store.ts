import { parseQueueAddress } from "../webhook/queue-address.js";
import { isRedisUrl } from "./redis-connection.js";

/**
 * The Redis every instance shares what must hold across instances in (docs/operations.md#shared-limits):
 * the lookup limits, the points window and the claims of OIDC tokens. Its URL and the prefixes of
 * the keys each keeps there.
 */
export interface SharedStoreAddress {
  url: string;
  /** The shared limits' keys: `tokensmith-limits`, or `<WEBHOOK_QUEUE prefix>:limits`. */
  limitsPrefix: string;
  /** The OIDC token claims' keys: `tokensmith-oidc-jti`, or `<WEBHOOK_QUEUE prefix>:oidc-jti`. */
  claimsPrefix: string;
}

/**
 * The one choice of the shared store, for the shared limits and the OIDC token claims alike:
 * LEGACY_QUOTA_KV when it is a Redis, else WEBHOOK_QUEUE's Redis (keys under its `?prefix=`), else
 * SERVICE_JWKS_CACHE when it is a Redis, else none: each instance keeps its own. LEGACY_QUOTA_KV
 * first: it is the store the instances already share state in (deliveries, the crawl lock);
 * WEBHOOK_QUEUE is a Redis every instance reaches too; SERVICE_JWKS_CACHE last, so that a fleet
 * with only the key-set cache on Redis still shares its claims (it did before this choice was one).
 */
export function sharedStoreAddress(settings: StoreSettings): SharedStoreAddress | null {
  // Asked on every /token (claims, limits): worked out once per settings object (the settings
  // reader hands out the same one while the environment is unchanged), not a URL parse per request.
  if (chosen.has(settings)) return chosen.get(settings)!;
  const address = chooseSharedStore(settings);
  chosen.set(settings, address);
  return address;
}

type StoreSettings = { releasesKvUrl: string | null; webhookQueueUrl: string | null; jwksCacheUrl: string | null };
const chosen = new WeakMap<StoreSettings, SharedStoreAddress | null>();

function chooseSharedStore(settings: StoreSettings): SharedStoreAddress | null {
  if (isRedisUrl(settings.releasesKvUrl)) return { url: settings.releasesKvUrl, limitsPrefix: "tokensmith-limits", claimsPrefix: "tokensmith-oidc-jti" };
  if (settings.webhookQueueUrl) {
    try {
      const queue = parseQueueAddress(settings.webhookQueueUrl);
      return { url: queue.redisUrl, limitsPrefix: `${queue.prefix}:limits`, claimsPrefix: `${queue.prefix}:oidc-jti` };
    } catch {
      // a WEBHOOK_QUEUE the broker refuses anyway (doctor and the queue say why): the next choice
    }
  }
  if (isRedisUrl(settings.jwksCacheUrl)) return { url: settings.jwksCacheUrl, limitsPrefix: "tokensmith-limits", claimsPrefix: "tokensmith-oidc-jti" };
  return null;
}
