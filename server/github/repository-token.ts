import type { Permissions } from "../../shared/token-permissions.js";
import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import type { PlatformSettings } from "../settings.js";
import { findInstallation, type Installation } from "./find-installation.js";
import { mintInstallationToken, type MintedToken } from "./mint-installation-token.js";

export interface RepositoryTokenInput {
  platform: PlatformSettings;
  app: AppCredentials;
  owner: string;
  repo: string;
  /** What to ask for, given what the installation was granted. */
  permissions: (granted: Record<string, string>) => Permissions;
}

/**
 * A fresh installation token for one repository: the installation (cached briefly, see README
 * "Caches") then the mint. A failed mint drops the cached installation, which may be gone or
 * changed; a 401 drops the App JWT (e.g. the platform's clock disagrees with ours).
 */
export async function mintRepositoryToken(ctx: BrokerContext, input: RepositoryTokenInput): Promise<{ installation: Installation; minted: MintedToken }> {
  const { platform, app, owner, repo } = input;
  const client = ctx.clientFor(platform);
  const appJwt = await ctx.appJwt.jwtFor(app);
  const cacheKey = ctx.installations.key(platform.apiBase, app.appId, `${owner}/${repo}`);
  let installation = ctx.installations.get(cacheKey);
  if (!installation) {
    try {
      installation = await findInstallation({ client, appJwt, retry: ctx.retry, installationId: platform.installationId, owner, repo });
    } catch (error) {
      ctx.appJwt.noteFailure(app, error);
      throw error;
    }
    ctx.installations.set(cacheKey, installation);
  }
  try {
    const minted = await mintInstallationToken({
      client,
      appJwt,
      installationId: installation.id,
      repositoryName: repo,
      permissions: input.permissions(installation.permissions),
      retry: ctx.retry,
    });
    return { installation, minted };
  } catch (error) {
    ctx.installations.drop(cacheKey);
    ctx.appJwt.noteFailure(app, error);
    throw error;
  }
}
