import { observeFetch } from "./admin/observe-fetch.js";
import { sameSealSecret } from "./kv/store-seal.js";
import { sealSecretOf } from "./signing/app-key.js";
import { createAppJwtSigner } from "./github/app-jwt.js";
import { createInstallationCache } from "./installation/installation-cache.js";
import { createNotInstalledCache } from "./installation/not-installed-cache.js";
import { createOwnerLookupLimiter, OWNER_SHARE, TARGET_LOOKUP_SHARE } from "./github/owner-lookup-limiter.js";
import { withSharedWindow } from "./github/shared-lookup-limiter.js";
import { createPlatformClient, type PlatformClient } from "./github/platform-client.js";
import { createPlatformRequest, DEFAULT_RETRY, type OctokitRequest, type RetryInfo, type RetryPolicy } from "./github/platform-request.js";
import { BODY_READ_TIMEOUT_MS, REQUEST_DEADLINE_MS } from "./http/limits.js";
import { POINTS_WINDOW_MS } from "./github/points-pacer.js";
import { createUpstreamGate, type UpstreamGate } from "./github/upstream-gate.js";
import { createCrawlTokenCache } from "./releases/crawl-token-cache.js";
import { RELEASES_STALE_GRACE_MS } from "./releases/stale-answer.js";
import { createPolicyService } from "./policy/policy-service.js";
import { createStoreRegistry } from "./kv/key-value-store.js";
import type { StoreCallOutcome } from "./kv/bounded-call.js";
import { openSharedLimits, type SharedLimits } from "./kv/shared-limits.js";
import { sharedStoreAddress } from "./kv/shared-store.js";
import { createLogger, type Logger } from "./log.js";
import { createMetrics } from "./metrics.js";
import { countLookups } from "./cache/count-lookups.js";
import { createKeySetSource, type KeySetSource } from "./oidc/key-set-source.js";
import { deriveSnapshotKey, type SnapshotBinding } from "./oidc/snapshot-seal.js";
import { createSettingsReader, type Env, type PlatformSettings, type Settings } from "./settings.js";
import { parseLogLevel } from "./start-settings.js";
import { createOidcTokenClaims } from "./token/oidc-token-claims.js";
import { upstreamFetch } from "./upstream-fetch.js";

/** Everything the broker touches outside itself is injected here (docs/design.md#layers). */
export interface BrokerDeps {
  /** The environment, read on every request (docs/settings.md). Default: process.env. */
  env?: () => Env;
  /** Milliseconds since the epoch. */
  now?: () => number;
  /** Every upstream HTTP call (platform, OIDC issuer) goes through this. */
  fetch?: typeof fetch;
  logger?: Logger;
  timing?: Partial<Timing>;
  retry?: RetryPolicy;
  /** Waits `ms` milliseconds (the webhook queue's pacing). Default: a timer. */
  sleep?: (ms: number) => Promise<void>;
}

export interface Timing {
  /** Per attempt of a platform call. */
  upstreamTimeoutMs: number;
  /** Per fetch of a discovery document or key set. */
  jwksTimeoutMs: number;
  /** Least time between two key-set fetches for one issuer. */
  jwksCooldownMs: number;
  /** A key set older than this is refreshed. */
  jwksMaxAgeMs: number;
  /** Upper bound on one key-value store call. */
  kvTimeoutMs: number;
  /** After a failed key-set snapshot write, wait this long before the next. */
  snapshotRetryMs: number;
  /** Lifetime of a cached repository → installation lookup. */
  installationTtlMs: number;
  /** Every request is answered within this (503 deadline_exceeded); see REQUEST_DEADLINE_MS. */
  requestDeadlineMs: number;
  /** A body not yet authenticated must have arrived this long after its request started (408 request_timeout). */
  bodyReadTimeoutMs: number;
  /**
   * The window of UPSTREAM_POINTS_PER_MINUTE: GitHub's minute. Only tests change it, scaling the
   * simulator's window down with it, so pacing across windows takes seconds, not minutes.
   */
  pointsWindowMs: number;
  /**
   * How long a /releases request with a stale aggregate waits for its refresh before it is answered
   * with the stale one (the refresh goes on). See RELEASES_STALE_GRACE_MS.
   */
  releasesStaleGraceMs: number;
}

export const DEFAULT_TIMING: Timing = {
  upstreamTimeoutMs: 10_000,
  jwksTimeoutMs: 5_000,
  jwksCooldownMs: 5_000,
  jwksMaxAgeMs: 10 * 60_000,
  kvTimeoutMs: 500,
  snapshotRetryMs: 10_000,
  installationTtlMs: 5 * 60_000,
  requestDeadlineMs: REQUEST_DEADLINE_MS,
  bodyReadTimeoutMs: BODY_READ_TIMEOUT_MS,
  pointsWindowMs: POINTS_WINDOW_MS,
  releasesStaleGraceMs: RELEASES_STALE_GRACE_MS,
};

export function createContext(deps: BrokerDeps = {}) {
  const now = deps.now ?? Date.now;
  const metrics = createMetrics();
  // The rate-limit gauge's platform, by the settings the latest request read (as the gates do):
  // re-reading the environment here cost every upstream answer a second read of every setting.
  const origins = createOriginMemo();
  // The per-installation gauge's principal: the gates know which installation a token is (they saw its mint).
  const principalOf = (authorization: string | undefined): string | null => {
    for (const gate of gates.values()) {
      const principal = gate.principals.principalOf(authorization);
      if (principal === null || principal.startsWith("app:")) return principal;
      if (principal.startsWith("installation:")) return principal;
    }
    return null;
  };
  // A wrong LOG_LEVEL stops server/main.ts before this; any other caller logs at info rather than throw.
  const log = deps.logger ?? createLogger({ level: parseLogLevel((deps.env ?? (() => process.env))().LOG_LEVEL) ?? "info" });
  const fetchImpl = observeFetch(deps.fetch ?? upstreamFetch, metrics, (url) => platformOf(latest ?? settings(), url, origins), undefined, principalOf, log);
  const timing: Timing = { ...DEFAULT_TIMING, ...deps.timing };
  const readSettings: () => Settings = createSettingsReader(deps.env ?? (() => process.env));
  // The settings as the latest request read them: what the platform gates go by, so a gate reads
  // UPSTREAM_MAX_CONCURRENCY as of the request (docs/settings.md) without reading the environment per call.
  let latest: Settings | undefined;
  const settings = (): Settings => (latest = readSettings());
  const countCall = (outcome: StoreCallOutcome) => metrics.storeCalls.inc({ outcome });
  const stores = createStoreRegistry({ log, timeoutMs: timing.kvTimeoutMs, countCall });

  // The not-installed answers and lookup windows every instance shares (docs/operations.md#caches):
  // on the store the latest request's settings name, one per URL and prefix (null: none usable).
  const notInstalled = createNotInstalledCache({ now });
  const sharedByAddress = new Map<string, SharedLimits | null>();
  const sharedLimits = (): SharedLimits | null => {
    const address = sharedStoreAddress(latest ?? settings());
    if (!address) return null;
    const key = `${address.limitsPrefix}\u0000${address.url}`;
    let shared = sharedByAddress.get(key);
    if (shared === undefined) {
      const connection = stores.redisFor(address.url);
      shared = connection && openSharedLimits(connection, { url: address.url, prefix: address.limitsPrefix, log, timeoutMs: timing.kvTimeoutMs, countCall });
      // Another instance's drop (an installation delivery it received) drops this one's copies at once.
      shared?.onDrop((ownerId) => notInstalled.dropOwner(ownerId));
      sharedByAddress.set(key, shared);
    }
    return shared;
  };
  const pointsPerWindow = () => (latest ?? settings()).upstreamPointsPerMinute;
  const lookupLimiter = (name: string, share: number) =>
    withSharedWindow(createOwnerLookupLimiter({ now, windowMs: timing.pointsWindowMs, pointsPerWindow, share }), { shared: sharedLimits, name, now, windowMs: timing.pointsWindowMs, pointsPerWindow, share });

  const keySources = new Map<string, KeySetSource>();
  const keySetFor = (issuer: string): KeySetSource => {
    let source = keySources.get(issuer);
    if (!source) {
      source = createKeySetSource({
        issuer, fetch: fetchImpl, now, log,
        timeoutMs: timing.jwksTimeoutMs, cooldownMs: timing.jwksCooldownMs, maxAgeMs: timing.jwksMaxAgeMs,
        snapshotRetryMs: timing.snapshotRetryMs,
        onFetched: (result) => metrics.oidcKeyFetches.inc({ result }), onSnapshotUsed: () => metrics.keySnapshotUsed.inc(),
      });
      keySources.set(issuer, source);
    }
    return source;
  };

  // SERVICE_JWKS_CACHE with the key that seals its snapshots, derived from the main App key (the
  // secret every instance shares); without that key no snapshot is written or trusted.
  // A key-store key seals with its signature of a fixed label (server/signing/app-key.ts): null until made.
  let sealKeyFor: { secret: string | Buffer; key: Buffer } | undefined;
  const jwksSnapshot = (current: Settings): SnapshotBinding | null => {
    const store = stores.get(current.jwksCacheUrl, "tokensmith-jwks");
    if (!store || !current.main.app.ok) return null;
    const secret = sealSecretOf(current.main.app.credentials.key);
    if (secret === null) return null;
    if (!sameSealSecret(sealKeyFor?.secret, secret)) sealKeyFor = { secret, key: deriveSnapshotKey(secret) };
    return { store, sealKey: sealKeyFor!.key };
  };

  // One gate per API base (UPSTREAM_MAX_CONCURRENCY and UPSTREAM_POINTS_PER_MINUTE, read per request; the rate-limit pause),
  // shared by that platform's Octokit request (GraphQL, listings) and lean client (lookup, mint).
  const gates = new Map<string, UpstreamGate>();
  const gateFor = (apiBase: string): UpstreamGate => {
    let gate = gates.get(apiBase);
    if (!gate) {
      gate = createUpstreamGate({
        limit: () => (latest ?? settings()).upstreamMaxConcurrency,
        pointsPerMinute: () => (latest ?? settings()).upstreamPointsPerMinute,
        pointsWindowMs: timing.pointsWindowMs,
        now,
        // With a shared store, the App's and each installation's points window is every instance's.
        sharedPoints: sharedLimits,
        apiBase,
      });
      gates.set(apiBase, gate);
    }
    return gate;
  };
  metrics.upstreamWaitingFrom(() =>
    [...gates].flatMap(([apiBase, gate]) => {
      const platform = URL.canParse(apiBase) ? platformOf(latest ?? settings(), new URL(apiBase), origins) : null;
      if (platform === null) return []; // a base no longer configured
      return [
        { platform, for: "concurrency" as const, value: gate.queued },
        { platform, for: "points" as const, value: gate.pacing },
      ];
    }),
  );
  metrics.upstreamRefusedFrom(() =>
    [...gates].flatMap(([apiBase, gate]) => {
      const platform = URL.canParse(apiBase) ? platformOf(latest ?? settings(), new URL(apiBase), origins) : null;
      if (platform === null) return [];
      return Object.entries(gate.refusals).map(([why, value]) => ({ platform, reason: why.replace(" ", "_"), value }));
    }),
  );
  const perApiBase = <T>(create: (options: { apiBase: string; fetch: typeof fetch; timeoutMs: number; now: () => number; gate: UpstreamGate }) => T) => {
    const made = new Map<string, T>();
    return (platform: PlatformSettings): T => {
      let one = made.get(platform.apiBase);
      if (one === undefined) {
        one = create({ apiBase: platform.apiBase, fetch: fetchImpl, timeoutMs: timing.upstreamTimeoutMs, now, gate: gateFor(platform.apiBase) });
        made.set(platform.apiBase, one);
      }
      return one;
    };
  };
  // Annotated: the inferred type would name a nested copy of @octokit/types (TS2742, no .d.ts).
  const requestFor: (platform: PlatformSettings) => OctokitRequest = perApiBase<OctokitRequest>(createPlatformRequest);
  const clientFor = perApiBase<PlatformClient>(createPlatformClient);

  return {
    now,
    sleep: deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))),
    fetch: fetchImpl,
    log,
    metrics,
    timing,
    // Every retried platform call, one line each (docs/design.md#decisions-where-the-contract-was-open: each attempt logged).
    retry: { ...(deps.retry ?? DEFAULT_RETRY), onRetry: (info: RetryInfo) => log.warn({ ...info, status: info.status ?? "network" }, "platform call retried") },
    settings,
    stores,
    keySetFor,
    jwksSnapshot,
    requestFor,
    clientFor,
    gateFor,
    appJwt: createAppJwtSigner(now),
    installations: countLookups(createInstallationCache({ now, ttlMs: timing.installationTtlMs }), (hit) => metrics.cacheRequests.inc({ cache: "installation", result: hit ? "hit" : "miss" })),
    notInstalled,
    /** OIDC tokens already used, so each mints once (server/token/oidc-token-claims.ts). */
    oidcClaims: createOidcTokenClaims({ now }),
    sharedLimits,
    // A tenth of UPSTREAM_POINTS_PER_MINUTE (as of the latest request) per owner and points window,
    // held across instances when they share a store.
    ownerLookups: lookupLimiter("owner", OWNER_SHARE),
    // Lookups of the other repositories a /token request names, per calling repository, apart from the above.
    targetLookups: lookupLimiter("target", TARGET_LOOKUP_SHARE),
    crawlTokens: createCrawlTokenCache(now),
    policies: createPolicyService({ now, onFileLookup: (hit) => metrics.cacheRequests.inc({ cache: "policy", result: hit ? "hit" : "miss" }) }),
    async close(): Promise<void> {
      await Promise.all([...keySources.values()].map((source) => source.settled()));
      for (const shared of sharedByAddress.values()) shared?.close();
      await stores.closeAll();
    },
  };
}

export type BrokerContext = ReturnType<typeof createContext>;

/** The platform an upstream URL is on, by origin (for the rate-limit gauge). */
function platformOf(settings: Settings, url: URL, origin: (base: string) => string | null): "main" | "enterprise" | null {
  if (origin(settings.main.apiBase) === url.origin) return "main";
  if (settings.enterprise?.apiBase && origin(settings.enterprise.apiBase) === url.origin) return "enterprise";
  return null;
}

/** An API base's origin (null when it is not a URL), parsed once per distinct base (there are one or two). */
function createOriginMemo(): (base: string) => string | null {
  const known = new Map<string, string | null>();
  return (base) => {
    let origin = known.get(base);
    if (origin === undefined) {
      origin = URL.canParse(base) ? new URL(base).origin : null;
      if (known.size >= 16) known.clear(); // settings changed many times: start over rather than grow
      known.set(base, origin);
    }
    return origin;
  };
}
