import pLimit from "p-limit";
import type { RepoReleases } from "../../shared/types.js";
import type { AppCredentials } from "../app-credentials.js";
import type { PlatformSettings } from "../settings.js";
import { idleConnections, preconnect } from "../upstream-connections.js";
import { PAGE_CONCURRENCY } from "./collect-pages.js";
import { crawlInstallation, type CrawlDeps } from "./crawl-installation.js";
import { listInstallations } from "./list-installations.js";
import { createRepositoryBudget, takeFirst } from "./repository-budget.js";

/**
 * Installations crawled at once, and GraphQL queries in flight at once; with the listing pages
 * fetched concurrently (PAGE_CONCURRENCY, shared by the whole crawl) at most 60 requests in
 * flight, under the platform's 100 concurrent requests (secondary rate limits).
 *
 * 24, not 12 (issue 28): with 12, a fleet of 20 installations minted in two waves, the last 8
 * after the first installations' whole crawl (mint, count, queries), a chain of round trips
 * longer than the floor's. Fresh 20 × 50 crawl over the 40 ms / 100 Mbit link (simulator/link.ts),
 * a new broker process each, medians of 3 runs, three rounds interleaved: 0.594 / 0.460 / 0.438 s
 * with 12, 0.397 / 0.374 / 0.365 s with 24 (about -18%).
 */
export const INSTALLATION_CONCURRENCY = 24;
const QUERY_CONCURRENCY = 20;

/**
 * Connections a crawl opens ahead (upstream-connections.ts): as many as the last crawl to the same
 * platform left open, or, for a process's first crawl, the mints and queries it may send at once.
 */
const lastConnections = new Map<string, number>();
const FIRST_CRAWL_CONNECTIONS = INSTALLATION_CONCURRENCY + QUERY_CONCURRENCY;

interface CrawlResult {
  repos: RepoReleases[];
  /** A cap was reached, or an installation failed: the list is incomplete. */
  truncated: boolean;
  /** Installations that failed (their repositories are absent). */
  failedInstallations: number[];
  /**
   * Nothing new was learnt: at least one installation failed and none was crawled (suspended ones
   * aside), or every release lookup failed (a GraphQL outage or rate limit: all `latest: null`).
   */
  nothingCrawled: boolean;
}

interface CrawlInput {
  ctx: CrawlDeps;
  platform: PlatformSettings;
  app: AppCredentials;
  maxInstallations: number;
  maxRepositories: number;
  requestId?: string;
}

/**
 * Every installation of the App (up to the cap), concurrently with a bound; in each, a read-only
 * token, the repositories and their newest releases. Repositories are kept in installation order
 * up to the repository cap, then sorted by name so the answer does not depend on timing.
 */
export async function crawlReleases(input: CrawlInput): Promise<CrawlResult> {
  const { ctx, platform, app } = input;
  const started = ctx.now();
  // Opened while the App JWT is signed and the installations are listed, so that the mints and
  // then the queries find connections ready instead of each waiting for a handshake.
  preconnect(platform.apiBase, lastConnections.get(platform.apiBase) ?? FIRST_CRAWL_CONNECTIONS);
  const listing = await ctx.appJwt.withJwt(app, (appJwt) => listInstallations({ client: ctx.clientFor(platform), appJwt, max: input.maxInstallations, retry: ctx.retry }));

  const budget = createRepositoryBudget(input.maxRepositories);
  const installationLimit = pLimit(INSTALLATION_CONCURRENCY);
  const queryLimit = pLimit(QUERY_CONCURRENCY);
  const pageLimit = pLimit(PAGE_CONCURRENCY);
  const tokens = { minted: 0, reused: 0 };
  const lookups = { learnt: 0, failed: 0 };
  const crawled = await Promise.all(
    listing.installations.map((installation, index) =>
      installationLimit(async () => {
        if (installation.suspended) {
          ctx.log.info({ installation_id: installation.id, account: installation.account }, "releases crawl: installation suspended, skipped");
          return { status: "ok" as const, repos: [], more: false };
        }
        return crawlInstallation({
          ctx,
          platform,
          app,
          installation,
          room: budget.roomFor(index),
          onListed: (count) => budget.record(index, count),
          queryLimit: (run) => queryLimit(run),
          pageLimit: (run) => pageLimit(run),
          requestId: input.requestId,
          onToken: (reused) => (reused ? (tokens.reused += 1) : (tokens.minted += 1)),
          onLookups: (learnt, failed) => {
            lookups.learnt += learnt;
            lookups.failed += failed;
          },
        });
      }),
    ),
  );

  const failedInstallations = listing.installations.filter((_, i) => crawled[i]!.status === "failed").map((inst) => inst.id);
  const kept = takeFirst(crawled.map((c) => (c.status === "ok" ? c.repos : [])), input.maxRepositories);
  const capReached = listing.truncated || kept.cut || crawled.some((c) => c.status === "skipped" || (c.status === "ok" && c.more));
  const repos = kept.items.sort(byRepository);
  const truncated = capReached || failedInstallations.length > 0;
  ctx.log.info(
    {
      installations: listing.installations.length,
      repositories: repos.length,
      failed_installations: failedInstallations,
      cap_reached: capReached,
      tokens_minted: tokens.minted,
      tokens_reused: tokens.reused,
      duration_ms: ctx.now() - started,
      request_id: input.requestId,
    },
    "releases crawl finished",
  );
  const nothingCrawled =
    (failedInstallations.length > 0 && !listing.installations.some((installation, i) => !installation.suspended && crawled[i]!.status === "ok")) ||
    (lookups.failed > 0 && lookups.learnt === 0);
  // The connections this crawl used are now idle in the pool: the next crawl opens as many ahead.
  lastConnections.set(platform.apiBase, Math.max(1, idleConnections(platform.apiBase)));
  return { repos, truncated, failedInstallations, nothingCrawled };
}

function byRepository(a: RepoReleases, b: RepoReleases): number {
  const left = a.repo.toLowerCase();
  const right = b.repo.toLowerCase();
  return left < right ? -1 : left > right ? 1 : a.repo < b.repo ? -1 : a.repo > b.repo ? 1 : 0;
}
