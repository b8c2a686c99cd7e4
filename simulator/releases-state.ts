// Releases per repository, served through the GraphQL Repository fields `releases(first, last,
// orderBy)` and `latestRelease`, with GitHub's names. Reading them needs an installation token
// that covers the repository (the endpoint checks that) and holds `contents` read or write.
// Reference: https://docs.github.com/graphql/reference/objects#release
import { GraphqlTypedError, nodeId, tokenPermission, type GraphqlContext } from "./graphql-endpoint.js";
import type { RepositoryState, Simulator } from "./types.js";

export interface ReleaseInput {
  tagName: string;
  /** Default: the tag name. null: a release without a name. */
  name?: string | null;
  isDraft?: boolean;
  isPrerelease?: boolean;
  /** Default: the simulator's clock, one second after the previous release of the repository. */
  createdAt?: string | Date;
  /** Default: createdAt, or null for a draft (GitHub publishes nothing for a draft). */
  publishedAt?: string | Date | null;
  /** The release notes (REST `body`). */
  body?: string | null;
  /** The branch or commit the tag is (or will be) made from. Default `main`. */
  targetCommitish?: string;
  /** The App whose bot made it through REST (its `author`). */
  authorAppId?: number;
}

export interface ReleaseState {
  id: number;
  tagName: string;
  name: string | null;
  isDraft: boolean;
  isPrerelease: boolean;
  createdAt: string;
  publishedAt: string | null;
  /** Insertion order: breaks ties between equal createdAt, later is newer. */
  sequence: number;
  body: string | null;
  targetCommitish: string;
  authorAppId: number | undefined;
}

export interface ReleasesApi {
  /** Adds a release to `owner/name` (the repository is created if unknown). */
  add(repository: string, release: ReleaseInput): ReleaseState;
  /**
   * Changes a release of `owner/name` in place (what `PATCH …/releases/{id}` does); publishing a
   * draft stamps `publishedAt`. Returns it, or undefined when there is no such release.
   */
  update(repository: string, id: number, change: Partial<Pick<ReleaseState, "tagName" | "name" | "body" | "isDraft" | "isPrerelease" | "targetCommitish">>): ReleaseState | undefined;
  /** Releases of `owner/name`, newest first (createdAt, then insertion order). */
  list(repository: string): readonly ReleaseState[];
  /** Makes every release lookup of `owner/name` fail with a GraphQL error (true) or work again (false). */
  failLookups(repository: string, failing?: boolean): void;
  clear(): void;
}

const RESOURCE_NOT_ACCESSIBLE = "Resource not accessible by integration";

export function registerReleases(sim: Simulator): ReleasesApi {
  const byRepository = new Map<string, ReleaseState[]>();
  const failing = new Set<string>();
  let sequence = 0;
  let nextId = 90_000_001;

  const keyOf = (repository: string) => repository.toLowerCase();
  const newestFirst = (list: readonly ReleaseState[]) =>
    [...list].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || b.sequence - a.sequence);

  const api: ReleasesApi = {
    add(repository, input) {
      const [owner, name] = repository.split("/");
      if (!owner || !name) throw new Error(`simulator: releases.add wants owner/name, got ${repository}`);
      const repo = sim.repository(owner, name);
      const list = byRepository.get(keyOf(repo.fullName)) ?? [];
      const previous = list.reduce((latest, r) => Math.max(latest, Date.parse(r.createdAt)), 0);
      const createdAt = iso(input.createdAt ?? new Date(Math.max(sim.now(), previous + 1000)));
      const isDraft = input.isDraft ?? false;
      const publishedAt = input.publishedAt === undefined ? (isDraft ? null : createdAt) : input.publishedAt === null ? null : iso(input.publishedAt);
      const release: ReleaseState = {
        id: nextId++,
        tagName: input.tagName,
        name: input.name === undefined ? input.tagName : input.name,
        isDraft,
        isPrerelease: input.isPrerelease ?? false,
        createdAt,
        publishedAt,
        sequence: ++sequence,
        body: input.body ?? null,
        targetCommitish: input.targetCommitish ?? "main",
        authorAppId: input.authorAppId,
      };
      list.push(release);
      byRepository.set(keyOf(repo.fullName), list);
      return release;
    },
    update(repository, id, change) {
      const release = byRepository.get(keyOf(repository))?.find((r) => r.id === id);
      if (!release) return undefined;
      const publishing = release.isDraft && change.isDraft === false;
      Object.assign(release, Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined)));
      if (publishing) release.publishedAt = iso(new Date(sim.now()));
      return release;
    },
    list: (repository) => newestFirst(byRepository.get(keyOf(repository)) ?? []),
    failLookups(repository, on = true) {
      if (on) failing.add(keyOf(repository));
      else failing.delete(keyOf(repository));
    },
    clear() {
      byRepository.clear();
      failing.clear();
    },
  };

  /** The checks GitHub makes before showing a private repository's releases. */
  const readable = (repo: RepositoryState, ctx: GraphqlContext): readonly ReleaseState[] => {
    if (failing.has(keyOf(repo.fullName))) throw new GraphqlTypedError("INTERNAL", "Something went wrong while executing your query.");
    const level = tokenPermission(ctx, "contents");
    if (level !== "read" && level !== "write") throw new GraphqlTypedError("FORBIDDEN", RESOURCE_NOT_ACCESSIBLE);
    return api.list(repo.fullName);
  };

  sim.graphql.extendRepository((repo, ctx) => ({
    // GitHub's "latest release": the newest that is neither a draft nor a prerelease.
    latestRelease: () => {
      const newest = readable(repo, ctx).filter((r) => !r.isDraft && !r.isPrerelease)[0];
      return newest ? releaseObject(repo, newest, newest) : null;
    },
    releases: (args: ConnectionArgs) => {
      const all = readable(repo, ctx);
      const latest = all.find((r) => !r.isDraft && !r.isPrerelease);
      return connection(ordered(all, args.orderBy), args, (r) => releaseObject(repo, r, latest));
    },
  }));

  return api;
}

interface ConnectionArgs {
  first?: number | null;
  last?: number | null;
  after?: string | null;
  before?: string | null;
  orderBy?: { field: "CREATED_AT" | "NAME"; direction: "ASC" | "DESC" } | null;
}

/** Without orderBy the connection is in creation order, oldest first. */
function ordered(newestFirst: readonly ReleaseState[], orderBy: ConnectionArgs["orderBy"]): ReleaseState[] {
  const oldestFirst = [...newestFirst].reverse();
  if (!orderBy) return oldestFirst;
  const ascending = orderBy.field === "NAME" ? [...oldestFirst].sort((a, b) => (a.name ?? "").localeCompare(b.name ?? "")) : oldestFirst;
  return orderBy.direction === "DESC" ? [...ascending].reverse() : ascending;
}

/** A ReleaseConnection over `items`, with GitHub's first/last limits (1..100, one of them required). */
function connection(items: ReleaseState[], args: ConnectionArgs, toObject: (release: ReleaseState) => Record<string, unknown>) {
  const { first, last } = args;
  if ((first === undefined || first === null) && (last === undefined || last === null)) {
    throw new GraphqlTypedError("MISSING_PAGINATION_BOUNDARIES", "You must provide a `first` or `last` value to properly paginate the `releases` connection.");
  }
  for (const [name, value] of [["first", first], ["last", last]] as const) {
    if (value !== undefined && value !== null && (value < 1 || value > 100)) {
      throw new GraphqlTypedError("EXCESSIVE_PAGINATION", `Requesting ${value} records on the \`releases\` connection exceeds the \`${name}\` limit of 100 records.`);
    }
  }
  const cursor = (index: number) => Buffer.from(`cursor:v2:${index}`).toString("base64");
  const indexOf = (value: string | null | undefined) => (value ? Number(Buffer.from(value, "base64").toString().split(":")[2]) : NaN);
  let start = Number.isInteger(indexOf(args.after)) ? indexOf(args.after) + 1 : 0;
  let end = Number.isInteger(indexOf(args.before)) ? indexOf(args.before) : items.length;
  if (first) end = Math.min(end, start + first);
  if (last) start = Math.max(start, end - last);
  const page = items.slice(start, end);
  return {
    totalCount: items.length,
    nodes: page.map(toObject),
    pageInfo: {
      hasNextPage: end < items.length,
      hasPreviousPage: start > 0,
      startCursor: page.length ? cursor(start) : null,
      endCursor: page.length ? cursor(end - 1) : null,
    },
  };
}

function releaseObject(repo: RepositoryState, release: ReleaseState, latest: ReleaseState | undefined): Record<string, unknown> {
  return {
    __typename: "Release",
    id: nodeId("RE", release.id),
    databaseId: release.id,
    name: release.name,
    tagName: release.tagName,
    // A draft has no public tag page yet; GitHub gives it an "untagged-…" address.
    url: release.isDraft
      ? `https://github.com/${repo.fullName}/releases/tag/untagged-${release.id.toString(16)}`
      : `https://github.com/${repo.fullName}/releases/tag/${encodeURIComponent(release.tagName)}`,
    isDraft: release.isDraft,
    isPrerelease: release.isPrerelease,
    isLatest: latest?.id === release.id,
    createdAt: release.createdAt,
    publishedAt: release.publishedAt,
  };
}

/** GitHub's DateTime: second precision, Z suffix. */
function iso(value: string | Date): string {
  return new Date(value).toISOString().replace(/\.\d{3}Z$/, "Z");
}
