import { BrokerError } from "../../shared/broker-error.js";
import type { RepoReleases } from "../../shared/types.js";
import type { AppCredentials } from "../app-credentials.js";
import type { InstallationDeps } from "../installation/repository-installation.js";
import { intersectPermissions } from "../installation/intersect-permissions.js";
import { mintInstallationToken, type MintedRepository } from "../installation/mint-installation-token.js";
import { statusOf } from "../github/platform-request.js";
import type { PlatformSettings } from "../settings.js";
import { PER_PAGE, type PageLimit } from "./collect-pages.js";
import { fetchLatestReleases } from "./fetch-latest-releases.js";
import { REPOSITORIES_PER_QUERY } from "./latest-releases-query.js";
import type { CrawlInstallation } from "./list-installations.js";
import type { CrawlToken, CrawlTokenCache } from "./crawl-token-cache.js";
import { countRepositories, listRepositories, mintedRepositories, mintedRepository, type CrawlRepository } from "./list-repositories.js";

/** The crawl reads releases and repository names: read access, nothing more. */
const CRAWL_PERMISSIONS = { contents: "read", metadata: "read" } as const;

type InstallationCrawl =
  | { status: "ok"; repos: RepoReleases[]; more: boolean }
  | { status: "failed" }
  | { status: "skipped" };

/** What a crawl uses of the broker's context (passed in: docs/design.md#layers). */
export type CrawlDeps = Pick<InstallationDeps, "appJwt" | "clientFor" | "log" | "retry" | "now"> & { crawlTokens: CrawlTokenCache };

interface InstallationCrawlInput {
  ctx: CrawlDeps;
  platform: PlatformSettings;
  app: AppCredentials;
  installation: CrawlInstallation;
  /** Most repositories worth listing (see repository-budget.ts). */
  room: number;
  /** Called as soon as the repository count is known, before the release queries. */
  onListed: (count: number) => void;
  /** Bounds the GraphQL queries of every installation together. */
  queryLimit: <T>(run: () => Promise<T>) => Promise<T>;
  /** Bounds the repository listing pages 2…n of every installation together. */
  pageLimit: PageLimit;
  requestId?: string;
  /** Told whether the installation's token was reused or minted. */
  onToken?: (reused: boolean) => void;
  /** Told of every answered chunk of lookups: how many repositories' releases it learnt, how many failed. */
  onLookups?: (learnt: number, failed: number) => void;
  /** The kept token a first attempt found refused (dropped before the second). */
  staleToken?: string;
}

/**
 * One installation: a read-only token over all its repositories (kept between crawls while it
 * lasts: crawl-token-cache.ts), the repository listing, and one
 * batched GraphQL query per chunk, each started as soon as its listing page is in. A failed token
 * or listing fails the installation (logged; the caller decides what the aggregate says); a failed
 * lookup fails only its repositories (`latest: null`, logged).
 */
export async function crawlInstallation(input: InstallationCrawlInput): Promise<InstallationCrawl> {
  const { ctx, platform, installation } = input;
  const log = ctx.log.child({ installation_id: installation.id, account: installation.account, request_id: input.requestId });
  if (input.room <= 0) return { status: "skipped" };

  const permissions = intersectPermissions(CRAWL_PERMISSIONS, installation.permissions);
  const tokenKey = ctx.crawlTokens.key({ apiBase: platform.apiBase, appId: input.app.appId, installationId: installation.id, permissions });
  const fresh = input.staleToken !== undefined;
  if (fresh) ctx.crawlTokens.drop(tokenKey, input.staleToken!);
  let token: string;
  let reused: boolean;
  let minted: CrawlToken["repositories"];
  let listed: Awaited<ReturnType<typeof listRepositories>>;
  // Each listing page's repositories are looked up as soon as the page is in, while later pages
  // are still on their way; a page is cut where the cap would cut it if the pages before it are
  // full (anything a short page leaves unqueried is looked up once the listing is complete).
  // Keyed by full name; what the crawl reports is only ever what the finished listing or mint
  // answer names, each looked up once.
  let lookups = new Map<string, Promise<RepoReleases>>();
  /** `counts`: whether these lookups' failures are worth a warning (early ones: once confirmed). */
  const lookUp = (offered: readonly CrawlRepository[], bearer: string, counts: Promise<boolean> = Promise.resolve(true)) => {
    const repositories = offered.filter((repository) => !lookups.has(repository.fullName));
    for (let i = 0; i < repositories.length; i += REPOSITORIES_PER_QUERY) {
      const chunk = repositories.slice(i, i + REPOSITORIES_PER_QUERY);
      const answers = input.queryLimit(() => queryChunk(chunk, bearer));
      void answers.then(async ({ failed }) => {
        if (failed.length > 0 && (await counts)) log.warn({ step: "latest_release", failed }, "releases crawl: latest release unknown for some repositories (reported as null)");
      });
      chunk.forEach((repository, j) => lookups.set(repository.fullName, answers.then(({ repos }) => repos[j]!)));
    }
  };
  const queryChunk = async (chunk: readonly CrawlRepository[], bearer: string) => {
    const outcomes = await fetchLatestReleases({ client: ctx.clientFor(platform), graphqlUrl: platform.graphqlUrl, token: bearer, repositories: chunk, retry: ctx.retry });
    const failed = chunk.flatMap((repository, i) => (outcomes[i]!.ok ? [] : [{ repo: repository.fullName, problem: (outcomes[i] as { problem: string }).problem }]));
    input.onLookups?.(chunk.length - failed.length, failed.length);
    const repos = chunk.map((repository, i): RepoReleases => {
      const outcome = outcomes[i]!;
      return { repo: repository.fullName, latest: outcome.ok ? outcome.latest : null };
    });
    return { repos, failed };
  };
  // A new mint's answer over selected repositories lists them all and takes hundreds of
  // milliseconds to arrive (26 MB for 5,000): its token comes first, so each hundred
  // repositories is looked up as soon as it is in (while the list would fit the room). These
  // lookups count only if the finished answer confirms that token; else they are dropped.
  let confirm!: (confirmed: boolean) => void;
  const confirmed = new Promise<boolean>((resolve) => (confirm = resolve));
  const early = { token: undefined as string | undefined, stopped: false, pending: [] as CrawlRepository[], count: 0 };
  const earlyHint = {
    token: (told: string) => {
      if (early.token === undefined) early.token = told;
      else early.stopped = true; // another attempt's token: the mint decides which one counts
    },
    repository: (told: MintedRepository) => {
      if (early.stopped || early.token === undefined) return;
      const repository = mintedRepository(told);
      early.count += 1;
      if (repository === undefined || early.count >= input.room) {
        early.stopped = true; // the shortcut will not be taken: the listing decides
        return;
      }
      early.pending.push(repository);
      if (early.pending.length === REPOSITORIES_PER_QUERY) lookUp(early.pending.splice(0), early.token, confirmed);
    },
  };
  try {
    // A token kept from an earlier crawl while it lasts (crawl-token-cache.ts); else a new one.
    ({ token, reused, repositories: minted } = await ctx.crawlTokens.tokenFor(tokenKey, () =>
      ctx.appJwt.withJwt(input.app, (appJwt) => mintInstallationToken({ client: ctx.clientFor(platform), appJwt, installationId: installation.id, permissions, retry: ctx.retry, manyRepositories: true, early: earlyHint })),
    ));
  } catch (error) {
    confirm(false);
    log.warn({ step: "mint", err: describe(error) }, "releases crawl: installation skipped, no token");
    return { status: "failed" };
  }
  early.stopped = true;
  confirm(early.token === token); // a kept token had no mint here: early.token is undefined
  if (early.token !== undefined && early.token !== token) lookups = new Map(); // not this token's lookups
  input.onToken?.(reused);
  // An installation on selected repositories: the mint's answer already lists them all, GitHub's
  // full repository object each (about 5 KB; some 26 MB for 5,000, read as it arrives and cut down
  // to the members the crawl reads: streamed-json.ts). Listing them again would fetch and parse all
  // of it a second time, a REST point per hundred. The lookups start now, and a
  // one-repository listing page confirms the count: only if the platform reaches another number
  // (the mint's list shortened, or the installation changed in between) is the listing walked.
  const offered = minted ? mintedRepositories(minted) : undefined;
  if (offered !== undefined && offered.length < input.room) {
    lookUp(offered, token);
    let total: number;
    try {
      total = await countRepositories({ client: ctx.clientFor(platform), token, retry: ctx.retry });
    } catch (error) {
      log.warn({ step: "list_repositories", err: describe(error) }, "releases crawl: installation skipped, repositories not counted");
      return { status: "failed" };
    }
    if (total === offered.length) {
      input.onListed(offered.length);
      return { status: "ok", repos: await Promise.all(offered.map((repository) => lookups.get(repository.fullName)!)), more: false };
    }
    log.info({ step: "list_repositories", minted: offered.length, listed: total }, "releases crawl: the mint's repositories are not all the token reaches, listing them");
  }
  try {
    listed = await listRepositories({
      client: ctx.clientFor(platform),
      token,
      limit: input.room,
      retry: ctx.retry,
      pageLimit: input.pageLimit,
      onPage: (page, repositories) => lookUp(repositories.slice(0, Math.max(0, input.room - (page - 1) * PER_PAGE)), token),
    });
  } catch (error) {
    if (reused && statusOf(error) === 401 && !fresh) {
      // The kept token no longer works (revoked, or the platform forgot it): once more with a new one.
      log.info({ step: "list_repositories" }, "releases crawl: kept token refused, minting a new one");
      return crawlInstallation({ ...input, staleToken: token });
    }
    log.warn({ step: "list_repositories", err: describe(error) }, "releases crawl: installation skipped, repositories not listed");
    return { status: "failed" };
  }
  input.onListed(listed.repositories.length);

  lookUp(listed.repositories, token);
  const repos = await Promise.all(listed.repositories.map((repository) => lookups.get(repository.fullName)!));
  return { status: "ok", repos, more: listed.more };
}

/** What went wrong, as codes and statuses only: never text a credential could hide in. */
function describe(error: unknown): string {
  if (error instanceof BrokerError) {
    const upstream = statusOf(error.cause);
    return upstream === undefined ? error.code : `${error.code}, upstream status ${upstream}`;
  }
  const status = statusOf(error);
  return status === undefined ? (error instanceof Error ? error.name : "unknown") : `upstream status ${status}`;
}
