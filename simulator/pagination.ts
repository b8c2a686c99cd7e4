// GitHub-style pagination: per_page (default 30, max 100), page (1-based) and a Link header whose
// rel order matches GitHub's (prev, next, last, first), so clients that parse it see real input.

export interface Page<T> {
  items: T[];
  page: number;
  perPage: number;
  total: number;
}

export function paginate<T>(items: readonly T[], query: Record<string, string>, defaultPerPage = 30): Page<T> {
  const perPage = clamp(parseInt(query.per_page ?? "", 10) || defaultPerPage, 1, 100);
  const page = Math.max(1, parseInt(query.page ?? "", 10) || 1);
  const start = (page - 1) * perPage;
  return { items: items.slice(start, start + perPage), page, perPage, total: items.length };
}

/**
 * The Link header for `page` of `total` items, or undefined when everything fits on one page
 * (GitHub omits the header then). `baseUrl` may carry other query parameters; they are kept.
 */
export function linkHeader(baseUrl: string, page: number, perPage: number, total: number): string | undefined {
  const last = Math.max(1, Math.ceil(total / perPage));
  if (last <= 1 && page <= 1) return undefined;
  const at = (p: number) => {
    const url = new URL(baseUrl);
    url.searchParams.set("per_page", String(perPage));
    url.searchParams.set("page", String(p));
    return `<${url.toString()}>`;
  };
  const parts: string[] = [];
  if (page > 1) parts.push(`${at(Math.min(page - 1, last))}; rel="prev"`);
  if (page < last) parts.push(`${at(page + 1)}; rel="next"`);
  if (page < last) parts.push(`${at(last)}; rel="last"`);
  if (page > 1) parts.push(`${at(1)}; rel="first"`);
  return parts.length ? parts.join(", ") : undefined;
}

function clamp(n: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, n));
}
