import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { buildVersion } from "./build-version.js";

/**
 * The broker's Prometheus metrics, on a registry of their own (never prom-client's global one):
 * each app, and so each test, counts for itself. Served by the admin listener (server/admin/).
 *
 * Labels are bounded by construction: a route is one of the four or `other`, a status an HTTP
 * status, a code one of the API's error codes, a call one of UPSTREAM_CALLS, a platform `main` or
 * `enterprise`. Never a repository, an owner, a token, a path or anything a client chooses.
 */
const ROUTES = ["/token", "/sign", "/releases", "/webhook"] as const;

/** What an upstream call was for (see server/admin/observe-fetch.ts for how a URL maps to one). */
export const UPSTREAM_CALLS = [
  "app", "installation_lookup", "installation_get", "list_installations", "list_repositories", "mint", "revoke",
  "graphql", "list_pulls", "get_pull", "update_branch", "policy_read", "git", "oidc_discovery", "jwks", "other",
] as const;
export type UpstreamCall = (typeof UPSTREAM_CALLS)[number];

const MISNAMED_DEFAULTS = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

/** Series of tokensmith_installation_rate_limit_remaining kept (platform × installation or App), least recently answered dropped first. */
export const MAX_RATE_LIMIT_SERIES = 100;

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function routeLabel(path: string): string {
  return (ROUTES as readonly string[]).includes(path) ? path : "other";
}

export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];

  const requests = new Counter({
    name: "tokensmith_requests_total",
    help: "Requests answered, by route (or other), HTTP status and the API's error code (empty on success).",
    labelNames: ["route", "status", "code"] as const,
    registers,
  });
  const requestDuration = new Histogram({
    name: "tokensmith_request_duration_seconds",
    help: "Time from a request's arrival to its response's end, by route.",
    labelNames: ["route"] as const,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const upstreamRequests = new Counter({
    name: "tokensmith_upstream_requests_total",
    help: "Calls to the platform and the OIDC issuers, by call and HTTP status (error: no answer, e.g. refused or timed out).",
    labelNames: ["call", "status"] as const,
    registers,
  });
  const upstreamDuration = new Histogram({
    name: "tokensmith_upstream_request_duration_seconds",
    help: "Time to an upstream call's response headers (or its failure), by call.",
    labelNames: ["call"] as const,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const tokensMinted = new Counter({
    name: "tokensmith_tokens_minted_total",
    help: "Installation tokens handed out by POST /token, by platform.",
    labelNames: ["platform"] as const,
    registers,
  });
  const oidcKeyFetches = new Counter({
    name: "tokensmith_oidc_key_fetches_total",
    help: "Fetches of an issuer's discovery document and key set, by result (ok or failed).",
    labelNames: ["result"] as const,
    registers,
  });
  const keySnapshotUsed = new Counter({
    name: "tokensmith_key_snapshot_used_total",
    help: "Times the last-known-good key set snapshot (SERVICE_JWKS_CACHE) was used because the issuer could not be reached.",
    registers,
  });
  const rateLimitRemaining = new Gauge({
    name: "tokensmith_rate_limit_remaining",
    help: "The platform's x-ratelimit-remaining on its latest answer, by platform (main or enterprise).",
    labelNames: ["platform"] as const,
    registers,
  });
  /** Per principal (installation id, or `app`), its latest remaining and when the platform resets it (epoch ms). Most recently answered last. */
  const remainingBy = new Map<string, { platform: string; installation: string; remaining: number; resetAt: number }>();
  new Gauge({
    name: "tokensmith_installation_rate_limit_remaining",
    help: `The platform's x-ratelimit-remaining on its latest answer to a call of one installation (installation: its id; app: the App's own JWT calls), by platform. At most ${MAX_RATE_LIMIT_SERIES} series per process (the most recently answered); a value whose x-ratelimit-reset has passed is dropped (the hour's budget is whole again).`,
    labelNames: ["platform", "installation"] as const,
    registers,
    collect() {
      this.reset();
      const at = Date.now();
      for (const [key, entry] of remainingBy) {
        if (entry.resetAt <= at) remainingBy.delete(key);
        else this.set({ platform: entry.platform, installation: entry.installation }, entry.remaining);
      }
    },
  });
  let queueDepth: (() => number | Promise<number>) | undefined;
  const webhookQueueDepth = new Gauge({
    name: "tokensmith_webhook_queue_depth",
    help: "Push jobs waiting in the webhook work queue (in process, or in Redis: shared by every instance); NaN while WEBHOOK_QUEUE's Redis does not answer.",
    registers,
    async collect() {
      if (queueDepth) this.set(await Promise.resolve(queueDepth()).catch(() => Number.NaN));
    },
  });
  let upstreamWaits: (() => Array<{ platform: string; for: "concurrency" | "points"; value: number }>) | undefined;
  const upstreamWaiting = new Gauge({
    name: "tokensmith_upstream_waiting",
    help: "Platform calls waiting in this process before they are sent, by platform and what they wait for: a free slot (concurrency, UPSTREAM_MAX_CONCURRENCY) or REST points (points, UPSTREAM_POINTS_PER_MINUTE).",
    labelNames: ["platform", "for"] as const,
    registers,
    collect() {
      this.reset();
      for (const platform of ["main", "enterprise"]) for (const reason of ["concurrency", "points"] as const) this.set({ platform, for: reason }, 0);
      for (const wait of upstreamWaits?.() ?? []) this.inc({ platform: wait.platform, for: wait.for }, wait.value);
    },
  });
  let upstreamRefusals: (() => Array<{ platform: string; reason: string; value: number }>) | undefined;
  const upstreamRefused = new Counter({
    name: "tokensmith_upstream_refused_total",
    help: "Platform calls this process refused before sending them, by platform and reason: no REST points before the request's deadline (points), a /token request over its repository's or owner's share of the App's budget with its queue full (share), the concurrency queue full (queue_full), a rate limit the platform announced (rate_limited). Points or share: the budget is short.",
    labelNames: ["platform", "reason"] as const,
    registers,
    collect() {
      // The gates count; the counter shows their totals (each only grows).
      this.reset();
      for (const platform of ["main", "enterprise"]) for (const reason of ["points", "share", "queue_full", "rate_limited"]) this.inc({ platform, reason }, 0);
      for (const refusal of upstreamRefusals?.() ?? []) if (refusal.value > 0) this.inc({ platform: refusal.platform, reason: refusal.reason }, refusal.value);
    },
  });
  const webhookJobs = new Counter({
    name: "tokensmith_webhook_jobs_total",
    help: "Push jobs run by the webhook queue, by how they ended: done, failed, or interrupted (at shutdown).",
    labelNames: ["outcome"] as const,
    registers,
  });
  const webhookDeliveries = new Counter({
    name: "tokensmith_webhook_deliveries_total",
    help: "Webhook deliveries answered 2xx, by outcome: queued, ignored (not a push) or the reason it was skipped.",
    labelNames: ["outcome"] as const,
    registers,
  });
  const storeReachable = new Gauge({
    name: "tokensmith_store_reachable",
    help: "Whether a configured store (SERVICE_JWKS_CACHE, LEGACY_QUOTA_KV, WEBHOOK_QUEUE) answered the latest /readyz probe: 1 or 0. /token goes on without it; alert on 0.",
    labelNames: ["setting"] as const,
    registers,
  });
  const storeCalls = new Counter({
    name: "tokensmith_store_calls_total",
    help: "The broker's calls to Redis outside the webhook queue's jobs (SERVICE_JWKS_CACHE and LEGACY_QUOTA_KV's stores and locks, the shared lookup limits, the webhook queue's depth read at each scrape), by outcome: ok, error (failed at once: refused, closed, its connection down), timeout (waited out its bound), skipped (not sent: that Redis failed within the last few seconds).",
    labelNames: ["outcome"] as const,
    registers,
  });
  for (const outcome of ["ok", "error", "timeout", "skipped"]) storeCalls.inc({ outcome }, 0);
  const buildInfo = new Gauge({
    name: "tokensmith_build_info",
    help: "Always 1, labelled with the broker's version and the Node.js version running it (which build a fleet runs).",
    labelNames: ["version", "node"] as const,
    registers,
  });
  buildInfo.set({ version: buildVersion(), node: process.versions.node }, 1);
  const cacheRequests = new Counter({
    name: "tokensmith_cache_requests_total",
    help: "Lookups in the broker's in-process caches, by cache (installation, policy) and result (hit, miss).",
    labelNames: ["cache", "result"] as const,
    registers,
  });
  for (const cache of ["installation", "policy"]) for (const result of ["hit", "miss"]) cacheRequests.inc({ cache, result }, 0);
  // Starting at zero, so a dashboard or alert has a series before the first event.
  for (const platform of ["main", "enterprise"]) tokensMinted.inc({ platform }, 0);
  for (const result of ["ok", "failed"]) oidcKeyFetches.inc({ result }, 0);
  for (const outcome of ["done", "failed", "interrupted"]) webhookJobs.inc({ outcome }, 0);
  webhookQueueDepth.set(0);

  let processDefaults = false;
  const sendersLimited = new Counter({
    name: "tokensmith_senders_limited_total",
    help: "Requests held to their sender's rate (SENDER_REQUESTS_PER_SECOND) before they were read, by route (or other) and outcome: delayed (waited for the sender's next start) or refused (429 sender_limited, its queue full).",
    labelNames: ["route", "outcome"] as const,
    registers,
  });

  return {
    registry,
    sendersLimited,
    tokensMinted,
    oidcKeyFetches,
    keySnapshotUsed,
    rateLimitRemaining,
    webhookDeliveries,
    webhookJobs,
    storeReachable,
    storeCalls,
    cacheRequests,

    /**
     * One platform answer's x-ratelimit-remaining for a principal (`installation:<id>` or `app:<id>`;
     * anything else is not kept). Bounded: past MAX_RATE_LIMIT_SERIES series the least recently
     * answered one goes.
     */
    noteRemaining(platform: string, principal: string, remaining: number, resetAt: number): void {
      const installation = principal.startsWith("installation:") ? principal.slice("installation:".length) : principal.startsWith("app:") ? "app" : null;
      if (installation === null || !/^(?:app|[0-9]{1,20})$/.test(installation)) return;
      const key = `${platform}/${installation}`;
      remainingBy.delete(key);
      remainingBy.set(key, { platform, installation, remaining, resetAt });
      if (remainingBy.size > MAX_RATE_LIMIT_SERIES) {
        const oldest = remainingBy.keys().next().value;
        if (oldest !== undefined) remainingBy.delete(oldest);
      }
    },

    /** The webhook queue tells where its depth is read from at scrape time (the latest queue made wins). */
    webhookQueueDepthFrom(read: () => number | Promise<number>): void {
      queueDepth = read;
    },

    /** The platform gates tell how many calls wait in them, read at scrape time. */
    upstreamWaitingFrom(read: () => Array<{ platform: string; for: "concurrency" | "points"; value: number }>): void {
      upstreamWaits = read;
    },

    /** The platform gates tell how many calls they refused, by reason, read at scrape time. */
    upstreamRefusedFrom(read: () => Array<{ platform: string; reason: string; value: number }>): void {
      upstreamRefusals = read;
    },

    /** One answered request (the request log's finish handler). */
    observeRequest(answer: { path: string; status: number; code: string | undefined; seconds: number }): void {
      const route = routeLabel(answer.path);
      requests.inc({ route, status: String(answer.status), code: answer.code ?? "" });
      requestDuration.observe({ route }, answer.seconds);
    },

    /** One upstream call: its HTTP status, or "error" when none came. */
    observeUpstream(answer: { call: UpstreamCall; status: number | "error"; seconds: number }): void {
      upstreamRequests.inc({ call: answer.call, status: String(answer.status) });
      upstreamDuration.observe({ call: answer.call }, answer.seconds);
    },

    /** prom-client's process metrics (CPU, memory, event loop, handles); once, by the process that serves them. */
    collectProcessDefaults(): void {
      if (processDefaults) return;
      processDefaults = true;
      collectDefaultMetrics({ register: registry });
      // prom-client names three gauges `_total`, which `promtool check metrics` rejects (a `_total`
      // suffix is for counters). Their per-type breakdowns (nodejs_active_handles{type}, …) stay.
      for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
    },

    /** The text exposition format, and its content type. */
    async exposition(): Promise<{ contentType: string; text: string }> {
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
