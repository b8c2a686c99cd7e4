import pLimit from "p-limit";
import { DEFAULT_RETRY, withRetry, type RetryPolicy } from "../github/platform-request.js";

/** The platform's page size cap for the listings the crawl walks. */
export const PER_PAGE = 100;

/**
 * Listing pages after the first fetched at once (per crawl: crawl-releases.ts shares one bound
 * between the installations), under the platform's 100 concurrent requests with its other bounds.
 */
export const PAGE_CONCURRENCY = 16;

/** Runs `run` when a slot is free (a p-limit function). */
export type PageLimit = <R>(run: () => Promise<R>) => Promise<R>;

interface Page<T> {
  items: T[];
  /** The Link header, if any: the platform sends `rel="next"` while more pages follow. */
  link: string | undefined;
}

/**
 * Every page of a listing (`per_page` items each) until `limit` items are in hand. Page 1 comes
 * alone; its Link header's `rel="last"` says how many pages there are, and the pages still needed
 * for `limit` items are then fetched concurrently (bounded by `pageLimit`; a page beyond
 * what the limit needs is never asked for). Items keep page order whatever finishes first. Without
 * a `rel="last"` the pages are walked one after another (`rel="next"`). Each page is a GET, so it
 * is retried with the shared policy; the first failure fails the listing and no further page starts.
 * A `fetchPage` that reports page 1's Link header as soon as it is in (before the page's body)
 * lets pages 2…n start then, on the platform's word that a page followed by another is full; they
 * are used only if page 1 then comes with that same Link and at least one item.
 * https://docs.github.com/rest/using-the-rest-api/using-pagination-in-the-rest-api
 */
export async function collectPages<T>(options: {
  limit: number;
  perPage?: number;
  /** Bounds pages 2…n (default: PAGE_CONCURRENCY at once for this listing alone). */
  pageLimit?: PageLimit;
  /** Each page's items as soon as that page is in (pages may arrive out of order). */
  onPage?: (page: number, items: readonly T[]) => void;
  retry?: RetryPolicy;
  /** `onLink`, if called, gets the page's Link header once the answer's headers are in. */
  fetchPage: (page: number, onLink?: (link: string | undefined) => void) => Promise<Page<T>>;
}): Promise<{ items: T[]; more: boolean }> {
  const perPage = options.perPage ?? PER_PAGE;
  const own = pLimit(PAGE_CONCURRENCY);
  const bound: PageLimit = options.pageLimit ?? ((run) => own(run));
  const fetchPage = async (page: number, onLink?: (link: string | undefined) => void) => {
    const answer = await withRetry(options.retry ?? DEFAULT_RETRY, `listing page ${page}`, () => options.fetchPage(page, onLink));
    options.onPage?.(page, answer.items);
    return answer;
  };
  /** Pages from..from+count-1 through the bound; none starts once `stop()` says so. */
  const wave = (from: number, count: number, stop: () => boolean) =>
    Array.from({ length: count }, (_, i) =>
      bound(async () => {
        if (stop()) throw new Error("listing abandoned");
        return fetchPage(from + i);
      }),
    );
  const wanted = (have: number, next: number, last: number) => Math.min(last - next + 1, Math.ceil((options.limit - have) / perPage));

  let failed = false;
  // The first wave, started on page 1's headers (see above).
  type Early = { link: string | undefined; pages: Array<Promise<Page<T>>>; dropped: boolean };
  let early: Early | undefined;
  const onLink = (link: string | undefined) => {
    if (early !== undefined) return; // a retried page 1: the first headers started what they could
    const last = lastPage(link);
    const count = last !== undefined && hasNextPage(link) ? wanted(perPage, 2, last) : 0;
    const started: Early = { link, pages: [], dropped: false };
    started.pages = count > 0 ? wave(2, count, () => failed || started.dropped) : [];
    for (const page of started.pages) page.catch(() => undefined); // read below, or dropped with the listing
    early = started;
  };
  try {
    const first = await fetchPage(1, onLink);
    const items = [...first.items];
    const last = lastPage(first.link);
    let next = 2;
    let hasNext = hasNextPage(first.link) && first.items.length > 0;
    let ahead = early !== undefined && early.pages.length > 0 && early.link === first.link && hasNext ? early.pages : undefined;
    if (early !== undefined && ahead === undefined) early.dropped = true;
    if (last !== undefined && hasNext) {
      // Normally one wave; another only if pages came back shorter than per_page.
      while (items.length < options.limit && next <= last) {
        const pages = ahead ?? wave(next, wanted(items.length, next, last), () => failed);
        ahead = undefined;
        for (const answer of await Promise.all(pages)) items.push(...answer.items);
        next += pages.length;
      }
      hasNext = next <= last;
    } else {
      for (; hasNext && items.length < options.limit; next += 1) {
        const answer = await fetchPage(next);
        items.push(...answer.items);
        hasNext = hasNextPage(answer.link) && answer.items.length > 0;
      }
    }
    if (items.length >= options.limit) return { items: items.slice(0, options.limit), more: hasNext || items.length > options.limit };
    return { items, more: false };
  } catch (error) {
    failed = true; // no page still waiting for the bound starts
    throw error;
  }
}

function hasNextPage(link: string | undefined): boolean {
  return /<[^>]*>;\s*rel="next"/.test(link ?? "");
}

/** The `page` of the Link header's `rel="last"` URL, or undefined. */
export function lastPage(link: string | undefined): number | undefined {
  const match = /<([^>]*)>;\s*rel="last"/.exec(link ?? "");
  if (!match) return undefined;
  try {
    const page = Number(new URL(match[1]!).searchParams.get("page"));
    return Number.isSafeInteger(page) && page >= 1 ? page : undefined;
  } catch {
    return undefined;
  }
}
