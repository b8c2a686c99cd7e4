// What a repository token must be scoped to, and the checks of the platform's answers against it,
// as pure functions (docs/design.md#layers). /token knows the repository and its owner by id (from
// the OIDC claims); /sign only by name.
import type { Installation } from "./find-installation.js";
import type { MintedRepository } from "./mint-installation-token.js";

export interface RepositoryScope {
  owner: string;
  repo: string;
  /** The claims' `repository_id` and `repository_owner_id`; absent for /sign (no claims). */
  ids?: { repositoryId: number; ownerId: number };
}

/**
 * The repository → installation cache subject. By id when the ids are known: a renamed owner or a
 * re-created repository is another key, so a stale entry never serves them. By name otherwise
 * (lowercased by the cache), in a namespace of its own.
 */
export function installationSubject(scope: RepositoryScope): string {
  return scope.ids ? `id:${scope.ids.repositoryId}:${scope.ids.ownerId}` : `name:${scope.owner}/${scope.repo}`;
}

/**
 * The installation must be on the repository's owner: the same account id when the ids are known
 * (ids survive renames, logins do not), else the same login (case-insensitive). An installation
 * naming no account serves nobody.
 */
export function installationServes(installation: Installation, scope: RepositoryScope): boolean {
  const account = installation.account;
  if (!account) return false;
  return scope.ids ? account.id === scope.ids.ownerId : account.login.toLowerCase() === scope.owner.toLowerCase();
}

/**
 * The mint's answer must name exactly the repository asked for: one entry, its `full_name` equal to
 * owner/repo (case-insensitive: names are on the platform) and, when the ids are known, its id and
 * its owner's id equal to them.
 */
export function mintedForScope(repositories: readonly MintedRepository[] | null, scope: RepositoryScope): boolean {
  if (!repositories || repositories.length !== 1) return false;
  const [only] = repositories as [MintedRepository];
  if (only.fullName === null || only.fullName.toLowerCase() !== `${scope.owner}/${scope.repo}`.toLowerCase()) return false;
  return !scope.ids || (only.id === scope.ids.repositoryId && only.ownerId === scope.ids.ownerId);
}

/** Another repository a token also covers (/token's `repositories`), known by id. */
export interface OtherRepository {
  id: number;
  name: string;
}

/**
 * With other repositories (/token, ids known): the answer names exactly the caller's repository
 * and each other one, by id, each under the owner and the name asked for (a repository renamed or
 * re-created since its consent was read fails here). `stale`: the others whose entry is missing
 * or named otherwise; `ok` only when the caller's entry is right, nothing is missing and nothing more is named.
 */
export function mintedForScopes(repositories: readonly MintedRepository[] | null, scope: RepositoryScope & { ids: NonNullable<RepositoryScope["ids"]> }, others: readonly OtherRepository[]): { ok: boolean; stale: OtherRepository[] } {
  if (!repositories) return { ok: false, stale: [...others] };
  const byId = new Map<number, MintedRepository>();
  for (const entry of repositories) if (entry.id !== null) byId.set(entry.id, entry);
  const named = (entry: MintedRepository | undefined, repo: string) =>
    entry !== undefined && entry.ownerId === scope.ids.ownerId && entry.fullName !== null && entry.fullName.toLowerCase() === `${scope.owner}/${repo}`.toLowerCase();
  const stale = others.filter((other) => !named(byId.get(other.id), other.name));
  const callerRight = named(byId.get(scope.ids.repositoryId), scope.repo);
  return { ok: callerRight && stale.length === 0 && repositories.length === 1 + others.length && byId.size === repositories.length, stale };
}
