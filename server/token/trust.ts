// The /token trust decisions as pure functions (docs/design.md#layers): table-tested, no I/O.
import { allowlistHas, type Allowlist } from "../allowlist.js";
import { BrokerError } from "../../shared/broker-error.js";
import type { Permissions } from "../../shared/token-permissions.js";
import type { AppCredentials } from "../app-credentials.js";
import type { PlatformSettings, Settings } from "../settings.js";

/** TOKEN_PERMISSIONS set but unusable → every /token request is 400 invalid_token_permissions. */
export function requireTokenPermissions(settings: Settings): Permissions {
  if (!settings.tokenPermissions.ok) throw new BrokerError("invalid_token_permissions", { detail: settings.tokenPermissions.problem });
  return settings.tokenPermissions.permissions;
}

/** The token's `repository` claim must be exactly owner/repo. */
export function matchRepository(claim: string, owner: string, repo: string): string {
  const requested = `${owner}/${repo}`;
  if (claim !== requested) throw new BrokerError("repo_mismatch");
  return requested;
}

/**
 * ALLOWED_REPOSITORIES: exact `owner/name` entries (server/allowlist.ts); unset allows every repository.
 * `other`: the name as the request's `repositories` gave it (that repository, not the caller's, is
 * outside the list: the answer's detail says which).
 */
export function checkAllowlist(allowed: Allowlist | null, repository: string, other?: string): void {
  if (allowed && !allowlistHas(allowed, repository)) {
    throw new BrokerError("repo_not_allowed", other === undefined ? {} : { detail: `repositories: ${other}`, answerDetail: `repository ${repository} (of repositories) is outside ALLOWED_REPOSITORIES` });
  }
}

/** The issuer that signed the token decides the platform: the main issuer always mints with the main App. */
export function trustedPlatforms(settings: Settings): PlatformSettings[] {
  return settings.enterprise && settings.enterprise.issuer !== settings.main.issuer
    ? [settings.main, settings.enterprise]
    : [settings.main];
}

export function requireApp(platform: PlatformSettings): AppCredentials {
  if (!platform.app.ok) throw new BrokerError("app_unconfigured");
  return platform.app.credentials;
}

/** The repository and its owner by id: what a mint is scoped to and checked against (ids survive renames and re-creations; names do not). */
interface RepositoryIdentity {
  repositoryId: number;
  ownerId: number;
}

// GitHub writes every custom claim as a string; ids are positive decimal integers.
const DECIMAL_ID = /^[1-9][0-9]{0,15}$/;

/**
 * The token's `repository_id` and `repository_owner_id` claims, both required: a string of digits
 * naming a positive safe integer. Anything else (absent, a number, "0", "12a", "1e3") → 401
 * invalid_oidc_token, reason claim_invalid: without them the broker cannot tell a re-created
 * repository or a renamed owner from the one the job ran in.
 */
export function readRepositoryIdentity(claims: Record<string, unknown>): RepositoryIdentity {
  const id = (name: string): number => {
    const value = Object.hasOwn(claims, name) ? claims[name] : undefined;
    const parsed = typeof value === "string" && DECIMAL_ID.test(value) ? Number(value) : NaN;
    if (!Number.isSafeInteger(parsed)) throw new BrokerError("invalid_oidc_token", { reason: "claim_invalid", detail: `${name} claim missing or not a decimal id` });
    return parsed;
  };
  return { repositoryId: id("repository_id"), ownerId: id("repository_owner_id") };
}
