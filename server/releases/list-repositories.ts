import type { OctokitRequest, RetryPolicy } from "../github/platform-request.js";
import { collectPages, parseJsonBody, PER_PAGE, RAW_BODY, type PageLimit } from "./collect-pages.js";

export interface CrawlRepository {
  owner: string;
  name: string;
  /** owner/name as the platform spells it. */
  fullName: string;
}

/**
 * `GET /installation/repositories` with an installation token, every page (2…n concurrently),
 * stopping once `limit` repositories are in hand (`more` says whether the platform had others).
 * https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-app-installation
 */
export async function listRepositories(input: {
  request: OctokitRequest;
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
    fetchPage: async (page) => {
      const response = await input.request("GET /installation/repositories", {
        per_page: PER_PAGE,
        page,
        headers: { authorization: `token ${input.token}` },
        request: RAW_BODY,
      });
      const list = ((await parseJsonBody(response.data)) as { repositories?: unknown } | null)?.repositories;
      if (!Array.isArray(list)) throw new Error("repository listing without a repositories array");
      return { items: list.flatMap(readRepository), link: response.headers.link };
    },
  });
  return { repositories: items, more };
}

function readRepository(raw: unknown): CrawlRepository[] {
  const { name, full_name, owner } = (raw ?? {}) as { name?: unknown; full_name?: unknown; owner?: { login?: unknown } | null };
  if (typeof name !== "string" || typeof full_name !== "string" || typeof owner?.login !== "string") return [];
  return [{ owner: owner.login, name, fullName: full_name }];
}
