import { GraphqlResponseError, withCustomRequest } from "@octokit/graphql";
import { DEFAULT_RETRY, statusOf, withRetry, type OctokitRequest, type RetryPolicy } from "../github/platform-request.js";
import type { CrawlRepository } from "./list-repositories.js";
import { latestReleasesQuery, readLatestReleases, type GraphqlErrorEntry, type RepositoryOutcome } from "./latest-releases-query.js";

/**
 * One batched GraphQL query for a chunk of repositories (see latest-releases-query.ts). Never
 * throws: a failed request makes every repository of the chunk a failure, and GraphQL errors
 * inside a 200 fail only the repositories they name. A query is a read, so it is retried like a GET.
 */
export async function fetchLatestReleases(input: {
  request: OctokitRequest;
  graphqlUrl: string;
  token: string;
  repositories: readonly CrawlRepository[];
  retry?: RetryPolicy;
}): Promise<RepositoryOutcome[]> {
  const { query, variables } = latestReleasesQuery(input.repositories);
  const graphql = withCustomRequest(input.request);
  const count = input.repositories.length;
  try {
    const data = await withRetry(input.retry ?? DEFAULT_RETRY, "latest releases query", () =>
      graphql<Record<string, unknown>>({ query, url: input.graphqlUrl, headers: { authorization: `token ${input.token}` }, ...variables }),
    );
    return readLatestReleases(count, data);
  } catch (error) {
    if (error instanceof GraphqlResponseError) {
      return readLatestReleases(count, error.data as Record<string, unknown> | null | undefined, (error.errors ?? []) as GraphqlErrorEntry[]);
    }
    const problem = `request failed: status ${statusOf(error) ?? "network"}`;
    return input.repositories.map(() => ({ ok: false, problem }));
  }
}
