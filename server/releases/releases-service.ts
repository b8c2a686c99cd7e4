import { RequestError } from "@octokit/request-error";
import type { ReleasesResponse } from "../../shared/types.js";
import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import { transientRetryAfter } from "../github/transient-failure.js";
import type { Settings } from "../settings.js";
import { BrokerError } from "../../shared/broker-error.js";
import { AGGREGATE_NAMESPACE, aggregateKey, readAggregate, readLastAggregate, writeAggregate, type StoredAggregate } from "./aggregate-cache.js";
import { crawlReleases } from "./crawl-releases.js";
import { crawlOnceForFleet, lockKey, WAIT_BUDGET_MS } from "./fleet-crawl.js";
import { PER_PAGE } from "./collect-pages.js";
import { createStaleAnswerer, type BudgetWait, type StaleSource } from "./stale-answer.js";

/**
 * The aggregate behind GET /releases: from LEGACY_QUOTA_KV when fresh; past its lifetime, still
 * served (marked stale) for RELEASES_STALE_SECONDS while a refresh runs or the platform's budget
 * is spent (stale-answer.ts has the rules); else from one crawl. Concurrent requests for the same
 * aggregate share one cache read and one crawl; the flights live in this object, which belongs to
 * one app (no module-level state). With a Redis store, the crawls of every instance share one
 * through a lease lock (fleet-crawl.ts).
 */
export function createReleasesService(ctx: BrokerContext) {
  const answerer = createStaleAnswerer({ now: ctx.now, graceMs: ctx.timing.releasesStaleGraceMs, log: ctx.log });

  const refresh = async (settings: Settings, app: AppCredentials, key: string, requestId?: string) => {
    // Unbound, unusable or unreachable store: null or a miss, never an error (the wrapper bounds it).
    const store = ctx.stores.get(settings.releasesKvUrl, AGGREGATE_NAMESPACE);
    const ttl = settings.releasesCacheTtlSeconds;
    const staleSeconds = settings.releasesStaleSeconds;
    const crawl = async () => {
      const { aggregate, nothingCrawled } = await crawlAggregate(settings, app, requestId);
      if (store) {
        // A crawl in which every installation, or every release lookup, failed (a rate limit
        // reached mid-crawl, an outage) learnt nothing: it never replaces the last aggregate,
        // which stays to be served stale.
        if (nothingCrawled && (await readLastAggregate(store, key, ctx.now(), ttl, staleSeconds))) {
          throw new BrokerError("internal_error", { detail: "releases crawl: every installation or every release lookup failed; the last aggregate stays" });
        }
        await writeAggregate(store, key, aggregate, ttl, staleSeconds);
      }
      return aggregate;
    };
    const lock = store ? ctx.stores.lockFor(settings.releasesKvUrl) : null;
    if (!store || !lock) return { value: await crawl(), cached: false };
    return crawlOnceForFleet({
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
  };

  const crawlAggregate = async (settings: Settings, app: AppCredentials, requestId?: string) => {
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
    return { aggregate, nothingCrawled: crawl.nothingCrawled };
  };

  /**
   * The App's budget for the crawl's first call (the installation listing, with the App JWT), as
   * the upstream gate knows it: a rate limit the platform announced for the App (its wait left), or
   * the App's points (UPSTREAM_POINTS_PER_MINUTE) not fitting by `byAt`. Undefined: it may go.
   */
  const budgetWait = async (settings: Settings, app: AppCredentials, byAt: number): Promise<BudgetWait | undefined> => {
    let jwt: string;
    try {
      jwt = await ctx.appJwt.jwtFor(app);
    } catch {
      return undefined; // the crawl fails on it as it always has
    }
    const gate = ctx.gateFor(settings.main.apiBase);
    const call = gate.describe("GET", `${settings.main.apiBase}/app/installations?per_page=${PER_PAGE}&page=1`, `Bearer ${jwt}`);
    const paused = gate.paused(call);
    if (paused) return { retryAfterSeconds: paused.retryAfterSeconds, paused: true };
    const tooLate = gate.pointsTooLate(call, byAt);
    return tooLate ? { retryAfterSeconds: tooLate.retryAfterSeconds, paused: false } : undefined;
  };

  return {
    /** `deadlineAt`: the request's deadline (epoch ms on ctx.now), past which waiting for points is pointless. */
    async releases(settings: Settings, app: AppCredentials, requestId?: string, deadlineAt?: number): Promise<ReleasesResponse> {
      const key = aggregateKey({
        apiBase: settings.main.apiBase,
        appId: app.appId,
        maxInstallations: settings.releasesMaxInstallations,
        maxRepositories: settings.releasesMaxRepositories,
      });
      const store = ctx.stores.get(settings.releasesKvUrl, AGGREGATE_NAMESPACE);
      const source: StaleSource<StoredAggregate> = {
        readLast: async () => {
          if (!store) return undefined;
          const last = await readLastAggregate(store, key, ctx.now(), settings.releasesCacheTtlSeconds, settings.releasesStaleSeconds);
          return last && { value: last.entry, fresh: last.fresh, ageMs: last.ageMs };
        },
        refresh: () => refresh(settings, app, key, requestId),
        budget: (byAt) => budgetWait(settings, app, byAt),
        rateLimitSeconds: (error) => rateLimitSecondsOf(error, ctx.now()),
      };
      const answer = await answerer.answer(key, source, deadlineAt ?? ctx.now() + ctx.timing.requestDeadlineMs);
      const { value: aggregate, cached, staleAgeMs } = answer;
      const response: ReleasesResponse = { generated_at: aggregate.generated_at, repos: aggregate.repos, truncated: aggregate.truncated, cached };
      if (staleAgeMs !== undefined) {
        response.stale = true;
        response.age_seconds = Math.floor(staleAgeMs / 1000);
      }
      return response;
    },
  };
}


/**
 * The platform's wait when a crawl failed on its rate limit (a 403/429 the platform sent, or the
 * gate's local refusal while a limit it announced is in force), found through the failure's
 * causes; undefined for any other failure (an outage stays 500 internal_error, as before).
 */
function rateLimitSecondsOf(error: unknown, nowMs: number): number | undefined {
  for (let cause = error, depth = 0; cause !== undefined && cause !== null && depth < 5; cause = (cause as { cause?: unknown }).cause, depth += 1) {
    if (cause instanceof RequestError) {
      if (!cause.response || (cause.status !== 403 && cause.status !== 429)) return undefined;
      return transientRetryAfter(cause, nowMs);
    }
  }
  return undefined;
}
