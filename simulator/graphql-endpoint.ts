// POST {graphqlUrl}: parses and validates each document against GitHub's published schema, then
// executes it with that schema (so every non-null field the document selects must be answered),
// with an installation token, answering the way GitHub does: HTTP 200 with `errors` (and no
// `data`) for an invalid document and beside `data` for typed failures (NOT_FOUND, FORBIDDEN,
// STALE_DATA…), HTTP 401 without credentials. A valid document that selects what the simulator
// does not implement (graphql-schema.ts's subset) is answered 501.
import type { DocumentNode, GraphQLError } from "graphql";
import { DOCS_ROOT, SimulatorHttpError } from "./router.js";
import type { IssuedToken, InstallationState, RepositoryState, RouteContext, RouteResult, Simulator } from "./types.js";

/** Thrown by resolvers: becomes `{type, message, path, locations}` in `errors`, like GitHub's. */
export class GraphqlTypedError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = "GraphqlTypedError";
  }
}

export interface GraphqlContext {
  sim: Simulator;
  token: string;
  issued: IssuedToken;
  installation: InstallationState;
}

/** Field values or resolvers `(args, ctx) => value` added to every Repository object. */
export type RepositoryExtension = (repo: RepositoryState, ctx: GraphqlContext) => Record<string, unknown>;
export type MutationResolver = (args: Record<string, unknown>, ctx: GraphqlContext) => unknown;

export interface GraphqlRegistry {
  extendRepository(extension: RepositoryExtension): void;
  mutation(name: string, resolver: MutationResolver): void;
  /** How many GraphQL requests were answered (also visible in sim.requests). */
  readonly requestCount: number;
}

/** Can this installation token see owner/name? (It covers the account and, if selected, the name.) */
export function tokenCoversRepository(ctx: GraphqlContext, owner: string, name: string): boolean {
  if (ctx.installation.account.toLowerCase() !== owner.toLowerCase()) return false;
  const repos = ctx.issued.repositories;
  return repos === "all" || selectedNames(repos).has(name.toLowerCase());
}

// A token's selected names, lower-cased once per token: a lookup per repository of a batched
// query stays constant-time (a scan per repository made a 5,000-repository crawl quadratic).
const selections = new WeakMap<readonly string[], Set<string>>();
function selectedNames(repos: readonly string[]): Set<string> {
  let set = selections.get(repos);
  if (!set) {
    set = new Set(repos.map((r) => r.toLowerCase()));
    selections.set(repos, set);
  }
  return set;
}

/** The token's level for a permission: "read", "write", or undefined. */
export function tokenPermission(ctx: GraphqlContext, permission: string): string | undefined {
  return ctx.issued.permissions[permission];
}

export function nodeId(prefix: string, id: number | string): string {
  return `${prefix}_kgDO${Buffer.from(String(id)).toString("base64url")}`;
}

export function createGraphqlEndpoint(sim: Simulator) {
  // graphql-js and GitHub's schema are loaded and built on the first GraphQL request, not here:
  // most simulators (a test file's, a sandbox's) never see one, and the two cost about 150 ms of
  // CPU alone, 400 ms inside a jest worker (docs/development.md#test-time). The first request
  // waits for them.
  let loaded: Promise<readonly [typeof import("graphql"), typeof import("./graphql-schema.js")]> | undefined;
  // One import after the other: jest's module linker fails two concurrent dynamic imports that
  // share a dependency (graphql-schema.js imports graphql-js).
  const load = () => (loaded ??= import("graphql").then(async (graphql) => [graphql, await import("./graphql-schema.js")] as const));
  const extensions: RepositoryExtension[] = [];
  const mutations = new Map<string, MutationResolver>();
  let requestCount = 0;

  const repositoryObject = (repo: RepositoryState, ctx: GraphqlContext) => {
    const base: Record<string, unknown> = {
      __typename: "Repository",
      id: nodeId("R", repo.id),
      databaseId: repo.id,
      name: repo.name,
      nameWithOwner: repo.fullName,
      owner: { __typename: "Organization", id: nodeId("O", repo.ownerId), login: repo.owner },
      isPrivate: true,
      url: `https://github.com/${repo.fullName}`,
    };
    for (const extension of extensions) Object.assign(base, extension(repo, ctx));
    return base;
  };

  const rootValue = (ctx: GraphqlContext) => ({
    repository: ({ owner, name }: { owner: string; name: string }) => {
      if (!tokenCoversRepository(ctx, owner, name)) {
        throw new GraphqlTypedError("NOT_FOUND", `Could not resolve to a Repository with the name '${owner}/${name}'.`);
      }
      return repositoryObject(sim.repository(owner, name), ctx);
    },
    rateLimit: () => ({ cost: 1, limit: 5000, nodeCount: 0, remaining: 4999, used: 1, resetAt: new Date(sim.now() + 3600_000).toISOString() }),
    ...Object.fromEntries([...mutations].map(([name, resolver]) => [name, (args: Record<string, unknown>) => resolver(args, ctx)])),
  });

  // Clients send the same query text again and again (values travel as variables): parse and
  // validate each text once, so a benchmark measures the broker rather than graphql-js.
  type Checked = { document: DocumentNode } | { errors: Record<string, unknown>[] } | { unimplemented: string };
  const checkedQueries = new Map<string, Checked>();
  const parseAndValidate = (query: string, [{ parse, validate }, { implementedSchema, platformSchema }]: Awaited<ReturnType<typeof load>>) => {
    let checked = checkedQueries.get(query);
    if (!checked) {
      try {
        const document = parse(query);
        const problems = validate(platformSchema(), document);
        const gaps = problems.length > 0 ? [] : validate(implementedSchema(), document);
        checked = problems.length > 0
          ? { errors: problems.map(formatValidationError) }
          : gaps.length > 0
            ? { unimplemented: gaps.map((gap) => gap.message).join(" ") }
            : { document };
      } catch (error) {
        checked = { errors: [formatError(error as GraphQLError)] };
      }
      if (checkedQueries.size >= 256) checkedQueries.clear();
      checkedQueries.set(query, checked);
    }
    return checked;
  };

  const handle = async (route: RouteContext): Promise<RouteResult> => {
    if (route.auth.kind === "none") {
      throw new SimulatorHttpError(401, { message: "This endpoint requires you to be authenticated.", documentation_url: "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql" });
    }
    const { token, issued, installation } = sim.requireInstallation(route);
    requestCount += 1;
    const body = route.body as { query?: unknown; variables?: unknown; operationName?: unknown } | undefined;
    if (!body || typeof body !== "object" || typeof body.query !== "string") {
      return { status: 400, body: { message: "Problems parsing JSON", documentation_url: DOCS_ROOT } };
    }
    const modules = await load();
    const checked = parseAndValidate(body.query, modules);
    if ("errors" in checked) return { status: 200, body: { errors: checked.errors } };
    if ("unimplemented" in checked) return { status: 501, body: { message: `simulator: not implemented in GraphQL: ${checked.unimplemented}` } };
    const { document } = checked;
    const ctx: GraphqlContext = { sim, token, issued, installation };
    const [{ execute }, { platformSchema }] = modules;
    const result = await execute({
      schema: platformSchema(),
      document,
      rootValue: rootValue(ctx),
      contextValue: ctx,
      variableValues: (body.variables ?? {}) as Record<string, unknown>,
      operationName: typeof body.operationName === "string" ? body.operationName : undefined,
    });
    const answer: Record<string, unknown> = { data: result.data ?? null };
    if (result.errors?.length) answer.errors = result.errors.map(formatError);
    return { status: 200, body: answer };
  };

  const registry: GraphqlRegistry = {
    extendRepository: (extension) => void extensions.push(extension),
    mutation: (name, resolver) => void mutations.set(name, resolver),
    get requestCount() {
      return requestCount;
    },
  };
  return { handle, registry };
}

/**
 * GitHub (graphql-ruby) words an unknown field its own way, with a code in `extensions`; other
 * validation problems keep graphql-js's wording.
 */
function formatValidationError(error: GraphQLError): Record<string, unknown> {
  const unknown = /^Cannot query field "([^"]+)" on type "([^"]+)"\./.exec(error.message);
  if (!unknown) return formatError(error);
  const [, fieldName, typeName] = unknown;
  return {
    extensions: { code: "undefinedField", typeName, fieldName },
    locations: error.locations,
    message: `Field '${fieldName}' doesn't exist on type '${typeName}'`,
  };
}

function formatError(error: GraphQLError): Record<string, unknown> {
  const typed = error.originalError instanceof GraphqlTypedError ? error.originalError : undefined;
  const out: Record<string, unknown> = {};
  if (typed) out.type = typed.type;
  if (error.path) out.path = error.path;
  if (error.locations) out.locations = error.locations;
  out.message = error.message;
  return out;
}
