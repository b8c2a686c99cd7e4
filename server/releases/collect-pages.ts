import { DEFAULT_RETRY, withRetry, type RetryPolicy } from "../github/platform-request.js";

/** The platform's page size cap for the listings the crawl walks. */
export const PER_PAGE = 100;

/**
 * Octokit parses bodies with a BigInt-safe JSON parser that costs tens of milliseconds per crawl
 * on listing pages (about 1 KB per repository). Ids here fit in a double, so the crawl asks for
 * the raw body (`parseSuccessResponseBody: false`) and parses it natively with this.
 */
export const RAW_BODY = { parseSuccessResponseBody: false } as const;

export async function parseJsonBody(body: unknown): Promise<unknown> {
  return new Response(body as ReadableStream).json();
}

export interface Page<T> {
  items: T[];
  /** The Link header, if any: the platform sends `rel="next"` while more pages follow. */
  link: string | undefined;
}

/**
 * Walks `page=1, 2, …` (per_page=100) until there is no `rel="next"` or `limit` items are in hand.
 * Each page is a GET, so it is retried with the shared policy.
 * https://docs.github.com/rest/using-the-rest-api/using-pagination-in-the-rest-api
 */
export async function collectPages<T>(options: {
  limit: number;
  retry?: RetryPolicy;
  fetchPage: (page: number) => Promise<Page<T>>;
}): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  for (let page = 1; ; page += 1) {
    const answer = await withRetry(options.retry ?? DEFAULT_RETRY, `listing page ${page}`, () => options.fetchPage(page));
    items.push(...answer.items);
    const hasNext = /<[^>]*>;\s*rel="next"/.test(answer.link ?? "");
    if (items.length >= options.limit) return { items: items.slice(0, options.limit), more: hasNext || items.length > options.limit };
    if (!hasNext || answer.items.length === 0) return { items, more: false };
  }
}
