import type { PlatformClient } from "../github/platform-client.js";
import { DEFAULT_RETRY, statusOf, withRetry, type RetryPolicy } from "../github/platform-request.js";
import type { CrawlRepository } from "./list-repositories.js";
import { latestReleasesQuery, readLatestReleases, type GraphqlErrorEntry, type RepositoryOutcome } from "./latest-releases-query.js";

/**
 * One batched GraphQL query for a chunk of repositories (see latest-releases-query.ts), sent with
 * the lean platform client: one JSON.stringify and one JSON.parse per query, where Octokit's
 * GraphQL client ran its BigInt-safe JSON over the 200 variables and the answer (a crawl of 5,000
 * repositories sends 50: `npm run bench -- releases-large`). Never throws: a failed request makes
 * every repository of the chunk a failure, and GraphQL errors inside a 200 (GitHub answers
 * partial `data` beside `errors`) fail only the repositories they name. A query is a read, so it
 * is retried like a GET.
 * https://docs.github.com/graphql/guides/forming-calls-with-graphql
 */
export async function fetchLatestReleases(input: {
  client: PlatformClient;
  graphqlUrl: string;
  token: string;
  repositories: readonly CrawlRepository[];
  retry?: RetryPolicy;
}): Promise<RepositoryOutcome[]> {
  const { query, variables } = latestReleasesQuery(input.repositories);
  const count = input.repositories.length;
  try {
    const answer = await withRetry(input.retry ?? DEFAULT_RETRY, "latest releases query", () =>
      input.client({ method: "POST", path: "", url: input.graphqlUrl, bearer: input.token, body: { query, variables } }),
    );
    if (!answer.data || typeof answer.data !== "object") return input.repositories.map(() => ({ ok: false, problem: "malformed answer" }));
    const { data, errors } = answer.data as { data?: unknown; errors?: unknown };
    const entries = Array.isArray(errors) ? (errors as GraphqlErrorEntry[]) : [];
    return readLatestReleases(count, data && typeof data === "object" ? (data as Record<string, unknown>) : null, entries);
  } catch (error) {
    const problem = `request failed: status ${statusOf(error) ?? "network"}`;
    return input.repositories.map(() => ({ ok: false, problem }));
  }
}
