import { BrokerError } from "../../shared/broker-error.js";
import type { Permissions } from "../../shared/token-permissions.js";
import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import type { PlatformSettings } from "../settings.js";
import { findInstallation, type Installation } from "./find-installation.js";
import { mintInstallationToken, type MintedToken } from "./mint-installation-token.js";
import { installationServes, installationSubject, mintedForScope, type RepositoryScope } from "./repository-scope.js";
import { revokeInstallationToken } from "./revoke-installation-token.js";

export interface RepositoryTokenInput extends RepositoryScope {
  platform: PlatformSettings;
  app: AppCredentials;
  /** What to ask for, given what the installation was granted. */
  permissions: (granted: Record<string, string>) => Permissions;
  /** For the log lines of a revocation. */
  requestId?: string;
}

/**
 * A fresh installation token for one repository: the installation (cached briefly, see README
 * "Caches"), which must be on the repository's owner, then the mint — by repository id when the
 * ids are known (/token), by name otherwise (/sign) — whose answer must name exactly that
 * repository. Anything else is 404 app_not_installed with nothing handed out: a token minted
 * anyway is revoked at once. A failed mint drops the cached installation, which may be gone or
 * changed; a 401 drops the App JWT (e.g. the platform's clock disagrees with ours).
 */
export async function mintRepositoryToken(ctx: BrokerContext, input: RepositoryTokenInput): Promise<{ installation: Installation; minted: MintedToken }> {
  const { platform, app, owner, repo } = input;
  const scope: RepositoryScope = { owner, repo, ids: input.ids };
  const client = ctx.clientFor(platform);
  const appJwt = await ctx.appJwt.jwtFor(app);
  const cacheKey = ctx.installations.key(platform.apiBase, app.appId, installationSubject(scope));
  let installation = ctx.installations.get(cacheKey);
  if (!installation) {
    try {
      installation = await findInstallation({ client, appJwt, retry: ctx.retry, installationId: platform.installationId, owner, repo, now: ctx.now });
    } catch (error) {
      ctx.appJwt.noteFailure(app, error);
      throw error;
    }
    if (!installationServes(installation, scope)) {
      // ENT_APP_INSTALLATION_ID names another owner's installation, or the owner is not who the claims say.
      throw new BrokerError("app_not_installed", { detail: "installation is on another account" });
    }
    ctx.installations.set(cacheKey, installation);
  }
  let minted: MintedToken;
  try {
    minted = await mintInstallationToken({
      client,
      appJwt,
      installationId: installation.id,
      ...(scope.ids ? { repositoryIds: [scope.ids.repositoryId] } : { repositoryName: repo }),
      permissions: input.permissions(installation.permissions),
      retry: ctx.retry,
      now: ctx.now,
    });
  } catch (error) {
    ctx.installations.drop(cacheKey);
    ctx.appJwt.noteFailure(app, error);
    throw error;
  }
  if (!mintedForScope(minted.repositories, scope)) {
    ctx.installations.drop(cacheKey);
    await revokeInstallationToken({ client, token: minted.token, log: ctx.log, why: "mint answer names another repository", requestId: input.requestId });
    throw new BrokerError("app_not_installed", { detail: "mint answer does not name the repository asked for" });
  }
  return { installation, minted };
}
