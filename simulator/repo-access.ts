// Who may use a repository route: an installation token that covers the repository (else 404, as
// GitHub hides what a token cannot see) and holds `permission` at `level` (else GitHub's 403
// "Resource not accessible by integration").
import { githubError } from "./router.js";
import type { GitStore } from "./git-state.js";
import type { AppState, InstallationState, IssuedToken, RouteContext, Simulator } from "./types.js";

const NOT_ACCESSIBLE = "Resource not accessible by integration";
const LEVELS: Record<string, number> = { read: 1, write: 2, admin: 3 };

export interface RepositoryAccess {
  /** owner/name as the platform spells it */
  repository: string;
  issued: IssuedToken;
  installation: InstallationState;
  /** The App the token was minted for: its bot (`<slug>[bot]`) is who acts. */
  app: AppState | undefined;
}

export function authoriseRepository(sim: Simulator, store: GitStore, ctx: RouteContext, level: "read" | "write", doc: string, permission = "contents"): RepositoryAccess {
  const { issued, installation } = sim.requireInstallation(ctx);
  const { owner = "", repo = "" } = ctx.params;
  const covered = owner.toLowerCase() === installation.account.toLowerCase()
    && (issued.repositories === "all" || issued.repositories.some((r) => r.toLowerCase() === repo.toLowerCase()));
  // A repository a test gave branches to (git.createBranch) exists even if nothing named it yet.
  const known = sim.findRepository(owner, repo) ?? (store.branchesOf(`${owner}/${repo}`).size > 0 ? sim.repository(owner, repo) : undefined);
  if (!covered || !known) throw githubError(404, "Not Found", doc);
  if ((LEVELS[issued.permissions[permission] ?? ""] ?? 0) < LEVELS[level]!) throw githubError(403, NOT_ACCESSIBLE, doc);
  return { repository: known.fullName, issued, installation, app: sim.apps.get(installation.appId) };
}

/** GitHub's 422 "Validation Failed" with one error object. */
export function validationFailed(doc: string, error: Record<string, string>) {
  const failure = githubError(422, "Validation Failed", doc);
  (failure.body as Record<string, unknown>).errors = [error];
  return failure;
}
