// REST routes authenticated with an App JWT: installation lookups and token minting, with
// GitHub's status codes and error messages so the broker's error mapping is tested for real.
import { DOCS_ROOT, SimulatorHttpError, githubError } from "./router.js";
import { isoSeconds, repositoryJson, type GithubState } from "./github-state.js";
import { linkHeader, paginate } from "./pagination.js";
import { simpleUserJson } from "./rest-shapes.js";
import type { InstallationState, RepositoryState, RouteContext, Simulator, TokenFormat } from "./types.js";

const DOC_REPO_INSTALLATION = `${DOCS_ROOT}/apps/apps#get-a-repository-installation-for-the-authenticated-app`;
const DOC_GET_INSTALLATION = `${DOCS_ROOT}/apps/apps#get-an-installation-for-the-authenticated-app`;
const DOC_MINT = `${DOCS_ROOT}/apps/apps#create-an-installation-access-token-for-an-app`;
const NOT_GRANTED = "The permissions requested are not granted to this installation.";
const NOT_ACCESSIBLE = "There is at least one repository that does not exist or is not accessible to the parent installation.";
const LEVELS: Record<string, number> = { read: 1, write: 2, admin: 3 };

const urlsOf = (sim: Simulator) => ({ apiBase: sim.apiBase, url: sim.url });

export function registerAppRoutes(sim: Simulator, state: GithubState): void {
  // GitHub's `integration` (apps/get-authenticated, docs/rest/apps/apps#get-the-authenticated-app). The App's permissions: the highest level any
  // of its installations was granted (the simulator keeps none per App), at least metadata: read.
  sim.route("GET", "/app", (ctx) => {
    const app = sim.requireApp(ctx);
    const permissions: Record<string, string> = { metadata: "read" };
    for (const inst of state.installations.values()) {
      if (inst.appId !== app.id) continue;
      for (const [name, level] of Object.entries(inst.permissions)) if ((LEVELS[level] ?? 0) > (LEVELS[permissions[name] ?? ""] ?? 0)) permissions[name] = level;
    }
    const stamp = "2026-01-01T00:00:00Z";
    const body = {
      id: app.id,
      slug: app.slug,
      client_id: `Iv1.${app.id.toString(16).padStart(16, "0")}`,
      node_id: `A_${Buffer.from(String(app.id)).toString("base64url")}`,
      owner: simpleUserJson("octo-owner", 1, "Organization", urlsOf(sim)),
      name: app.slug,
      description: "A simulated GitHub App",
      external_url: sim.url,
      html_url: `${sim.url}/apps/${app.slug}`,
      created_at: stamp,
      updated_at: stamp,
      permissions,
      events: ["push"],
      installations_count: [...state.installations.values()].filter((i) => i.appId === app.id).length,
    };
    return { status: 200, body };
  });

  sim.route("GET", "/repos/:owner/:repo/installation", (ctx) => {
    const app = sim.requireApp(ctx);
    const inst = state.installationFor(app.id, ctx.params.owner!, ctx.params.repo!);
    if (!inst) throw githubError(404, "Not Found", DOC_REPO_INSTALLATION);
    return { status: 200, body: state.installationJson(inst, urlsOf(sim)) };
  });

  sim.route("GET", "/app/installations/:id", (ctx) => {
    const inst = ownInstallation(ctx, state, DOC_GET_INSTALLATION);
    return { status: 200, body: state.installationJson(inst, urlsOf(sim)) };
  });

  sim.route("GET", "/app/installations", (ctx) => {
    const app = sim.requireApp(ctx);
    const mine = [...state.installations.values()].filter((i) => i.appId === app.id).sort((a, b) => a.id - b.id);
    const page = paginate(mine, ctx.query);
    const link = linkHeader(`${sim.apiBase}/app/installations`, page.page, page.perPage, page.total);
    return { status: 200, headers: link ? { link } : undefined, body: page.items.map((i) => state.installationJson(i, urlsOf(sim))) };
  });

  sim.route("POST", "/app/installations/:id/access_tokens", (ctx) => {
    const inst = ownInstallation(ctx, state, DOC_MINT);
    const request = readMintBody(ctx.body);
    const permissions = grantedPermissions(inst, request.permissions);
    const repos = selectedRepositories(inst, state, request.repositories, request.repository_ids);
    const names: string[] | "all" = repos ? repos.map((r) => r.name) : inst.repositories === "all" ? "all" : [...inst.repositories];
    const { token, issued } = state.issueToken(inst.id, permissions, names, requestedFormat(ctx.headers["x-github-stateless-s2s-token"]) ?? sim.tokenFormat);
    const body: Record<string, unknown> = {
      token,
      expires_at: isoSeconds(issued.expiresAt),
      permissions: { ...permissions },
      repository_selection: names === "all" ? "all" : "selected",
    };
    if (names !== "all") body.repositories = (repos ?? state.reposOf(inst)).map((r) => repositoryJson(r, urlsOf(sim)));
    return { status: 201, body };
  });
}

/**
 * GitHub's per-request override of the token format on a mint: `enabled` forces a stateless token,
 * `disabled` a classic one, any other value is ignored (the rollout's choice, here `sim.tokenFormat`):
 * https://github.blog/changelog/2026-05-15-github-app-installation-tokens-per-request-override-header/
 */
function requestedFormat(header: string | string[] | undefined): TokenFormat | undefined {
  if (header === "enabled") return "stateless";
  if (header === "disabled") return "classic";
  return undefined;
}

/** The installation named in the path, if it belongs to the authenticated App; else GitHub's 404. */
function ownInstallation(ctx: RouteContext, state: GithubState, doc: string): InstallationState {
  const app = ctx.sim.requireApp(ctx);
  const inst = state.installations.get(Number(ctx.params.id));
  if (!inst || inst.appId !== app.id) throw githubError(404, "Not Found", doc);
  return inst;
}

interface MintBody {
  repositories?: string[];
  repository_ids?: number[];
  permissions?: Record<string, string>;
}

function invalid(detail: string): SimulatorHttpError {
  return githubError(422, `Invalid request.\n\n${detail}`, DOC_MINT);
}

function readMintBody(body: unknown): MintBody {
  if (body === undefined) return {};
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new SimulatorHttpError(400, { message: "Problems parsing JSON", documentation_url: DOC_MINT, status: "400" });
  }
  const { repositories, repository_ids, permissions } = body as Record<string, unknown>;
  if (repositories !== undefined && (!Array.isArray(repositories) || !repositories.every((r) => typeof r === "string"))) {
    throw invalid(`For 'properties/repositories', ${JSON.stringify(repositories)} is not an array of strings.`);
  }
  if (repository_ids !== undefined && (!Array.isArray(repository_ids) || !repository_ids.every((r) => Number.isInteger(r)))) {
    throw invalid(`For 'properties/repository_ids', ${JSON.stringify(repository_ids)} is not an array of integers.`);
  }
  if (permissions !== undefined) {
    if (typeof permissions !== "object" || permissions === null || Array.isArray(permissions)) {
      throw invalid(`For 'properties/permissions', ${JSON.stringify(permissions)} is not an object.`);
    }
    for (const [name, level] of Object.entries(permissions)) {
      if (typeof level !== "string" || !(level in LEVELS)) {
        throw invalid(`For 'properties/${name}', ${JSON.stringify(level)} is not one of ["read", "write"].`);
      }
    }
  }
  return { repositories, repository_ids, permissions } as MintBody;
}

/** None requested → everything the installation holds; asking above a grant → 422. */
function grantedPermissions(inst: InstallationState, requested: Record<string, string> | undefined): Record<string, string> {
  if (!requested || Object.keys(requested).length === 0) return { ...inst.permissions };
  for (const [name, level] of Object.entries(requested)) {
    const held = inst.permissions[name];
    if (!held || (LEVELS[level] ?? 99) > (LEVELS[held] ?? 0)) throw githubError(422, NOT_GRANTED, DOC_MINT);
  }
  return { ...requested };
}

/** undefined = not narrowed; otherwise the union of the named and the numbered repositories. */
function selectedRepositories(
  inst: InstallationState,
  state: GithubState,
  names: string[] | undefined,
  ids: number[] | undefined,
): RepositoryState[] | undefined {
  if (names === undefined && ids === undefined) return undefined;
  const picked = new Map<number, RepositoryState>();
  for (const name of names ?? []) {
    if (!state.covers(inst, name)) throw githubError(422, NOT_ACCESSIBLE, DOC_MINT);
    const repo = state.repository(inst.account, name);
    picked.set(repo.id, repo);
  }
  const reachable = state.reposOf(inst);
  for (const id of ids ?? []) {
    const repo = reachable.find((r) => r.id === id);
    if (!repo) throw githubError(422, NOT_ACCESSIBLE, DOC_MINT);
    picked.set(repo.id, repo);
  }
  return [...picked.values()];
}
