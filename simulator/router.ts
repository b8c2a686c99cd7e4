// A small explicit route table: method + path pattern → handler. Each feature (OIDC, App routes,
// later GraphQL, pulls, releases...) registers its rows from its own module.
// A row whose pattern is an operation of GitHub's REST description (method + path template) has
// its JSON request body checked against that description before the handler runs, so no route can
// take a body the platform refuses (see openapi-validate.ts).
import { githubRestDescriptionIfInstalled, routePath, type OpenapiOperation } from "./openapi-validate.js";
import type { RouteContext, RouteHandler, RouteResult } from "./types.js";

export const DOCS_ROOT = "https://docs.github.com/rest";

/** Thrown by handlers (and requireApp/requireInstallation); the server answers with it as-is. */
export class SimulatorHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(`simulator HTTP ${status}: ${JSON.stringify(body)}`);
    this.name = "SimulatorHttpError";
  }
}

/** GitHub's error body shape: message + documentation_url (+ status as a string on newer routes). */
export function githubError(status: number, message: string, documentationUrl = DOCS_ROOT, withStatus = true): SimulatorHttpError {
  const body: Record<string, string> = { message, documentation_url: documentationUrl };
  if (withStatus) body.status = String(status);
  return new SimulatorHttpError(status, body);
}

interface Row {
  method: string;
  pattern: string;
  regex: RegExp;
  names: string[];
  handler: RouteHandler;
  /** Looked up when the row is added (GET rows take no body: never): null = GitHub describes no such operation. */
  operation?: OpenapiOperation | null;
  /** A REST API row (`sim.route`): the request's API version is judged before its handler runs. */
  rest: boolean;
}

interface RouteMatch {
  handler: RouteHandler;
  params: Record<string, string>;
  row: Row;
}

/** Which described operation a route pattern implements; the GHES flavor's `/api/v3` prefix aside. */
type DescribeOperation = (method: string, pattern: string) => OpenapiOperation | undefined;

// Without @octokit/openapi installed (a production install of the package) no row is described,
// so no body is checked (see githubRestDescriptionIfInstalled).
const describeGithubOperation: DescribeOperation = (method, pattern) =>
  // A trailing `*` (a path or a ref with slashes in it) is one `{path}` or `{ref}` parameter there.
  githubRestDescriptionIfInstalled()?.operation(method, routePath(pattern));

/** Bodies are judged only for callers GitHub would let in: 401 comes before 422. */
const AUTHENTICATED = new Set(["app", "installation"]);

/**
 * `:name` matches one path segment (URL-decoded); a trailing `*` matches the rest.
 * Literal segments are escaped, so patterns like `/.well-known/jwks` are safe.
 */
function compile(pattern: string): { regex: RegExp; names: string[] } {
  const names: string[] = [];
  const source = pattern
    .split("/")
    .map((segment) => {
      if (segment.startsWith(":")) {
        names.push(segment.slice(1));
        return "([^/]+)";
      }
      if (segment === "*") {
        names.push("rest");
        return "(.*)";
      }
      return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return { regex: new RegExp(`^${source}$`), names };
}

export class Router {
  private rows: Row[] = [];

  /**
   * Operations are looked up as rows are added, while the simulator is being created: read on a
   * first request instead, the description would stall the process (and a broker under test in
   * it) past short timeouts.
   */
  constructor(private readonly describe: DescribeOperation = describeGithubOperation) {}

  add(method: string, pattern: string, handler: RouteHandler, options: { rest?: boolean } = {}): void {
    const { regex, names } = compile(pattern);
    // Newest first, so a later task can replace a placeholder (e.g. the 501 GraphQL row).
    const row: Row = { method: method.toUpperCase(), pattern, regex, names, handler, rest: options.rest ?? false };
    // Looked up now, while the simulator is being put together (its body schema is compiled on first use).
    if (row.method !== "GET") row.operation = this.describe(row.method, pattern) ?? null;
    this.rows.unshift(row);
  }

  /** Every row's method and pattern, in the order they were added. */
  routes(): Array<{ method: string; pattern: string }> {
    return this.rows.map(({ method, pattern }) => ({ method, pattern })).reverse();
  }

  match(method: string, path: string): RouteMatch | undefined {
    const upper = method.toUpperCase();
    for (const row of this.rows) {
      if (row.method !== upper && row.method !== "*") continue;
      const m = row.regex.exec(path);
      if (!m) continue;
      const params: Record<string, string> = {};
      row.names.forEach((name, i) => {
        params[name] = safeDecode(m[i + 1] ?? "");
      });
      return { handler: row.handler, params, row };
    }
    return undefined;
  }

  /**
   * Run the matching handler; unknown routes answer 501 so an unintended call fails loudly. A REST
   * row's request passes `restGate` first (the API version): its answer, when it gives one, stands.
   */
  async dispatch(ctx: Omit<RouteContext, "params">, restGate?: () => RouteResult | undefined): Promise<RouteResult> {
    const found = this.match(ctx.method, ctx.path);
    if (!found) return notImplemented(ctx.method, ctx.path);
    const refusal = found.row.rest ? restGate?.() : undefined;
    if (refusal) return refusal;
    try {
      this.checkBody(found.row, ctx);
      return await found.handler({ ...ctx, params: found.params });
    } catch (error) {
      if (error instanceof SimulatorHttpError) return { status: error.status, headers: error.headers, body: error.body };
      // A bug in the simulator: surface it in the response so the failing test shows why.
      return { status: 500, body: { message: `simulator: handler threw: ${String((error as Error)?.stack ?? error)}` } };
    }
  }

  /** GitHub's 400 for a body that is not JSON, its 422 for one the operation's schema refuses. */
  private checkBody(row: Row, ctx: Omit<RouteContext, "params">): void {
    if (ctx.body === undefined || !AUTHENTICATED.has(ctx.auth.kind)) return;
    const operation = row.operation;
    if (!operation?.hasBody) return;
    // http-server keeps a body that does not parse as the raw text.
    if (typeof ctx.body === "string") throw githubError(400, "Problems parsing JSON", operation.documentationUrl);
    const problem = operation.validateBody(ctx.body);
    if (problem) throw githubError(422, problem, operation.documentationUrl);
  }
}

export function notImplemented(method: string, path: string): RouteResult {
  return { status: 501, body: { message: `simulator: not implemented: ${method.toUpperCase()} ${path}` } };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
