import { REPOSITORY_FIELDS, type MintedRepository } from "../installation/mint-installation-token.js";
import type { PlatformClient } from "../github/platform-client.js";
import { DEFAULT_RETRY, withRetry, type RetryPolicy } from "../github/platform-request.js";
import { collectPages, PER_PAGE, type PageLimit } from "./collect-pages.js";

export interface CrawlRepository {
  owner: string;
  name: string;
  /** owner/name as the platform spells it. */
  fullName: string;
}

/**
 * `GET /installation/repositories` with an installation token, every page (2…n concurrently),
 * stopping once `limit` repositories are in hand (`more` says whether the platform had others).
 * Sent with the lean platform client: a page is GitHub's full repository object a hundred times
 * (about 460 KB), read as it arrives, each repository parsed on its own and cut down to the members
 * read here (streamed-json.ts; `npm run bench -- releases-large`).
 * https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-app-installation
 */
export async function listRepositories(input: {
  client: PlatformClient;
  token: string;
  limit: number;
  retry?: RetryPolicy;
  /** Bounds pages 2…n, fetched concurrently once page 1 is in (collect-pages.ts). */
  pageLimit?: PageLimit;
  /** Each page's repositories as soon as that page is in (see collect-pages.ts). */
  onPage?: (page: number, repositories: readonly CrawlRepository[]) => void;
}): Promise<{ repositories: CrawlRepository[]; more: boolean }> {
  const { items, more } = await collectPages({
    limit: input.limit,
    retry: input.retry,
    pageLimit: input.pageLimit,
    onPage: input.onPage,
    fetchPage: async (page, onLink) => {
      const answer = await input.client({
        method: "GET",
        path: `/installation/repositories?per_page=${PER_PAGE}&page=${page}`,
        bearer: input.token,
        streamArray: { key: "repositories", keep: REPOSITORY_FIELDS },
        onHeaders: onLink && ((headers) => onLink(headers.get("link") ?? undefined)),
      });
      const list = (answer.data as { repositories?: unknown } | null | undefined)?.repositories;
      if (!Array.isArray(list)) throw new Error("repository listing without a repositories array");
      return { items: list.flatMap(readRepository), link: answer.headers.link };
    },
  });
  return { repositories: items, more };
}

function readRepository(raw: unknown): CrawlRepository[] {
  const { name, full_name, owner } = (raw ?? {}) as { name?: unknown; full_name?: unknown; owner?: { login?: unknown } | null };
  if (typeof name !== "string" || typeof full_name !== "string" || typeof owner?.login !== "string") return [];
  return [{ owner: owner.login, name, fullName: full_name }];
}

/**
 * How many repositories the token reaches (`total_count` of a one-repository listing page): 1 REST
 * point and a few hundred bytes, where the whole listing is a point and some 460 KB per hundred.
 */
export async function countRepositories(input: { client: PlatformClient; token: string; retry?: RetryPolicy }): Promise<number> {
  const answer = await withRetry(input.retry ?? DEFAULT_RETRY, "repository count", () =>
    input.client({ method: "GET", path: "/installation/repositories?per_page=1&page=1", bearer: input.token }),
  );
  const total = (answer.data as { total_count?: unknown } | null | undefined)?.total_count;
  if (typeof total !== "number" || !Number.isSafeInteger(total) || total < 0) throw new Error("repository listing without a total_count");
  return total;
}

/** A mint answer's repository as the crawl queries it; undefined if it lacks a name or owner. */
export function mintedRepository({ name, fullName, ownerLogin }: MintedRepository): CrawlRepository | undefined {
  return name === null || fullName === null || ownerLogin === null ? undefined : { owner: ownerLogin, name, fullName };
}

/** The mint answer's repositories as the crawl queries them; undefined if any lacks a name or owner. */
export function mintedRepositories(minted: readonly MintedRepository[]): CrawlRepository[] | undefined {
  const repositories: CrawlRepository[] = [];
  for (const entry of minted) {
    const repository = mintedRepository(entry);
    if (repository === undefined) return undefined;
    repositories.push(repository);
  }
  return repositories;
}
