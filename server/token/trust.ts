// The /token trust decisions as pure functions (STYLE.md practice 6): table-tested, no I/O.
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

/** ALLOWED_REPOSITORIES: exact equality after trimming, no globbing; unset allows every repository. */
export function checkAllowlist(allowed: ReadonlySet<string> | null, repository: string): void {
  if (allowed && !allowed.has(repository)) throw new BrokerError("repo_not_allowed");
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
