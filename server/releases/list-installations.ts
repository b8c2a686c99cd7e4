import { BrokerError } from "../../shared/broker-error.js";
import type { PlatformClient } from "../github/platform-client.js";
import type { RetryPolicy } from "../github/platform-request.js";
import { statusOf } from "../github/platform-request.js";
import { collectPages, PER_PAGE } from "./collect-pages.js";

export interface CrawlInstallation {
  id: number;
  account: string;
  /** What the installation was granted: the crawl's token asks for no more than this. */
  permissions: Record<string, string>;
  suspended: boolean;
}

/**
 * `GET /app/installations` with the App JWT, every page (2…n concurrently), up to `max` installations. More than
 * `max` → `truncated`. Without this listing there is no aggregate at all, so a failure here fails
 * the request (500 internal_error: the API gives /releases no upstream-failure code). Sent with the
 * lean platform client, as every other call of the crawl: it is the crawl's first, and Octokit's
 * request path costs a new process some 10 ms of loading and compiling before it is sent.
 * https://docs.github.com/rest/apps/apps#list-installations-for-the-authenticated-app
 */
export async function listInstallations(input: {
  client: PlatformClient;
  appJwt: string;
  max: number;
  retry?: RetryPolicy;
}): Promise<{ installations: CrawlInstallation[]; truncated: boolean }> {
  try {
    const { items, more } = await collectPages({
      limit: input.max,
      retry: input.retry,
      fetchPage: async (page) => {
        const { data, headers } = await input.client({ method: "GET", path: `/app/installations?per_page=${PER_PAGE}&page=${page}`, bearer: input.appJwt });
        if (!Array.isArray(data)) throw new BrokerError("internal_error", { detail: "installation listing is not an array" });
        return { items: data.map(readInstallation), link: headers.link };
      },
    });
    return { installations: items, truncated: more };
  } catch (error) {
    if (error instanceof BrokerError) throw error;
    throw new BrokerError("internal_error", { detail: `installation listing failed: status ${statusOf(error) ?? "network"}`, cause: error });
  }
}

function readInstallation(raw: unknown): CrawlInstallation {
  const { id, account, permissions, suspended_at } = (raw ?? {}) as { id?: unknown; account?: { login?: unknown } | null; permissions?: unknown; suspended_at?: unknown };
  if (!Number.isSafeInteger(id) || (id as number) <= 0) throw new BrokerError("internal_error", { detail: "installation without an id" });
  return {
    id: id as number,
    account: typeof account?.login === "string" ? account.login : `installation ${String(id)}`,
    permissions: permissions && typeof permissions === "object" && !Array.isArray(permissions) ? { ...(permissions as Record<string, string>) } : {},
    suspended: suspended_at !== null && suspended_at !== undefined,
  };
}
