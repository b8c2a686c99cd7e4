// The batched GraphQL query: one aliased `repository` field per repository, so a whole chunk of an
// installation's repositories costs one round trip. Owners and names travel as variables, never
// spliced into the query text. Pure functions: no I/O here.
// https://docs.github.com/graphql/reference/objects#repository (releases, ReleaseOrder)
import type { LatestRelease } from "../../shared/types.js";
import type { CrawlRepository } from "./list-repositories.js";

/** Repositories per query: the bench's 50 per installation fit in one; GitHub allows far more nodes. */
export const REPOSITORIES_PER_QUERY = 100;

export function latestReleasesQuery(repositories: readonly CrawlRepository[]): { query: string; variables: Record<string, string> } {
  const variables: Record<string, string> = {};
  const declarations: string[] = [];
  const fields: string[] = [];
  // One variable per owner (a chunk is one installation's, so one owner), one per name, and no
  // spaces the parser does not need: the queries are most of what a crawl sends (issue 28: 0.66
  // of the 1.54 MB a 5,000-repository crawl put on the wire, 12 kB a query of 100 with a pair of
  // variables each and the text indented).
  const ownerVariable = new Map<string, string>();
  repositories.forEach((repository, i) => {
    let owner = ownerVariable.get(repository.owner);
    if (owner === undefined) {
      owner = `o${ownerVariable.size}`;
      ownerVariable.set(repository.owner, owner);
      variables[owner] = repository.owner;
      declarations.push(`$${owner}:String!`);
    }
    variables[`n${i}`] = repository.name;
    declarations.push(`$n${i}:String!`);
    fields.push(`r${i}:repository(owner:$${owner},name:$n${i}){...l}`);
  });
  // "Latest" is the newest release as the platform lists it, drafts and prereleases included
  // (docs/design.md#decisions-where-the-contract-was-open), which `latestRelease` (newest non-draft, non-prerelease) is not.
  const query = [
    `query LatestReleases(${declarations.join(",")}){`,
    ...fields,
    "}",
    "fragment l on Repository{releases(first:1,orderBy:{field:CREATED_AT,direction:DESC}){nodes{tagName name url isDraft isPrerelease publishedAt}}}",
  ].join("\n");
  return { query, variables };
}

export interface GraphqlErrorEntry {
  type?: string;
  message?: string;
  path?: ReadonlyArray<string | number>;
}

export type RepositoryOutcome = { ok: true; latest: LatestRelease | null } | { ok: false; problem: string };

/**
 * One outcome per repository, in order. A repository fails when its alias carries an error or its
 * answer is missing or malformed; the others stand (GitHub answers partial data beside `errors`).
 */
export function readLatestReleases(count: number, data: Record<string, unknown> | null | undefined, errors: readonly GraphqlErrorEntry[] = []): RepositoryOutcome[] {
  const problemOf = new Map<string, string>();
  for (const error of errors) {
    const alias = typeof error.path?.[0] === "string" ? error.path[0] : undefined;
    if (alias && !problemOf.has(alias)) problemOf.set(alias, error.type ?? "ERROR");
  }
  const outcomes: RepositoryOutcome[] = [];
  for (let i = 0; i < count; i += 1) {
    const alias = `r${i}`;
    const problem = problemOf.get(alias);
    const repository = data?.[alias] as { releases?: { nodes?: unknown } } | null | undefined;
    if (problem) outcomes.push({ ok: false, problem });
    else if (!repository || !repository.releases || !Array.isArray(repository.releases.nodes)) {
      outcomes.push({ ok: false, problem: errors.length > 0 && !data ? (errors[0]?.type ?? "ERROR") : "missing" });
    } else {
      const node = repository.releases.nodes[0];
      const latest = node === undefined || node === null ? null : toLatestRelease(node);
      outcomes.push(latest === undefined ? { ok: false, problem: "malformed" } : { ok: true, latest });
    }
  }
  return outcomes;
}

/** The 2.4 shape from a GraphQL Release; undefined when the node is not one. */
function toLatestRelease(node: unknown): LatestRelease | undefined {
  const { tagName, name, url, isDraft, isPrerelease, publishedAt } = node as Record<string, unknown>;
  if (typeof tagName !== "string" || typeof url !== "string" || typeof isDraft !== "boolean" || typeof isPrerelease !== "boolean") return undefined;
  return {
    tag: tagName,
    // A release without a name has `name: null` upstream; the API's field is a string.
    name: typeof name === "string" ? name : "",
    // null for a draft: nothing has been published yet.
    published_at: typeof publishedAt === "string" ? publishedAt : null,
    url,
    draft: isDraft,
    prerelease: isPrerelease,
  };
}
