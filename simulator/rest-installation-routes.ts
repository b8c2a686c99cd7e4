// REST routes authenticated with an installation token: revoke, list the token's repositories,
// read one repository. Enough for the broker's revoke path and for smoke-testing minted tokens.
import { DOCS_ROOT, githubError } from "./router.js";
import { repositoryJson, type GithubState } from "./github-state.js";
import { FULL_REPOSITORY_EXTRAS } from "./rest-shapes.js";
import { linkHeader, paginate } from "./pagination.js";
import type { InstallationState, IssuedToken, RepositoryState, Simulator } from "./types.js";

/**
 * The repositories a token may touch (narrowed at mint time, or all the installation reaches).
 * Linear in the token's and the installation's repositories (one set of the installation's names;
 * `state.covers` per name would be quadratic: 5,000 repositories cost seconds per listing page).
 * Same answer as filtering with `state.covers`: bare names only, case-insensitive.
 */
function tokenRepositories(state: GithubState, issued: IssuedToken, inst: InstallationState): readonly RepositoryState[] {
  const reachable = tokenRepositoryNames(state, issued, inst);
  return Array.isArray(reachable) ? reachable.map((name) => state.repository(inst.account, name)) : reachable.repositories;
}

/**
 * `tokenRepositories` before the names become repositories: a listing page turns only its own
 * hundred into GitHub's repository objects, not all 5,000 of a large installation on every page.
 */
function tokenRepositoryNames(state: GithubState, issued: IssuedToken, inst: InstallationState): string[] | { repositories: readonly RepositoryState[] } {
  if (issued.repositories === "all") return inst.repositories === "all" ? { repositories: state.reposOf(inst) } : inst.repositories;
  // Kept per token while neither list is replaced (the state replaces, never edits, these arrays):
  // each of a crawl's 50 listing pages would otherwise rebuild the same 5,000 names.
  const kept = namesOf.get(issued);
  if (kept?.issued === issued.repositories && kept.installation === inst.repositories) return kept.names;
  const selected = inst.repositories === "all" ? undefined : new Set(inst.repositories.map((name) => name.toLowerCase()));
  const names = issued.repositories.filter((name) => !name.includes("/") && (selected === undefined || selected.has(name.toLowerCase())));
  namesOf.set(issued, { issued: issued.repositories, installation: inst.repositories, names });
  return names;
}
const namesOf = new WeakMap<IssuedToken, { issued: readonly string[]; installation: readonly string[] | "all"; names: string[] }>();

export function registerInstallationRoutes(sim: Simulator, state: GithubState): void {
  sim.route("DELETE", "/installation/token", (ctx) => {
    const { issued } = sim.requireInstallation(ctx);
    issued.revoked = true;
    return { status: 204 };
  });

  sim.route("GET", "/installation/repositories", (ctx) => {
    const { issued, installation } = sim.requireInstallation(ctx);
    const reachable = tokenRepositoryNames(state, issued, installation);
    const named = paginate<string | RepositoryState>(Array.isArray(reachable) ? reachable : reachable.repositories, ctx.query);
    const page = { ...named, items: named.items.map((item) => (typeof item === "string" ? state.repository(installation.account, item) : item)) };
    const link = linkHeader(`${sim.apiBase}/installation/repositories`, page.page, page.perPage, page.total);
    return {
      status: 200,
      headers: link ? { link } : undefined,
      body: {
        total_count: page.total,
        repository_selection: issued.repositories === "all" ? "all" : "selected",
        repositories: page.items.map((r) => repositoryJson(r, { apiBase: sim.apiBase, url: sim.url })),
      },
    };
  });

  sim.route("GET", "/repos/:owner/:repo", (ctx) => {
    const { issued, installation } = sim.requireInstallation(ctx);
    const { owner, repo } = ctx.params as { owner: string; repo: string };
    const sameOwner = owner.toLowerCase() === installation.account.toLowerCase();
    // An "all" token reaches any repository of the account, even one no test registered yet.
    const found = !sameOwner
      ? undefined
      : issued.repositories === "all"
        ? state.covers(installation, repo) ? state.repository(installation.account, repo) : undefined
        : tokenRepositories(state, issued, installation).find((r) => r.name.toLowerCase() === repo.toLowerCase());
    if (!found) throw githubError(404, "Not Found", `${DOCS_ROOT}/repos/repos#get-a-repository`);
    return { status: 200, body: { ...repositoryJson(found, { apiBase: sim.apiBase, url: sim.url }), ...FULL_REPOSITORY_EXTRAS } };
  });
}
