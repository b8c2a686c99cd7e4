import type { AppCredentials } from "../app-credentials.js";
import type { PlatformSettings } from "../settings.js";
import { findInstallation, type Installation } from "./find-installation.js";
import type { InstallationDeps } from "./repository-installation.js";

/** What a webhook delivery names: its installation (`installation.id`) and the repository it is about. */
interface DeliveredInstallation {
  installationId: number;
  owner: string;
  repo: string;
}

/** The installation cache's key of an installation read by id (docs/operations.md#caches). */
export function installationByIdKey(deps: Pick<InstallationDeps, "installations">, platform: PlatformSettings, app: AppCredentials, installationId: number): string {
  return deps.installations.key(platform.apiBase, app.appId, `installation:${installationId}`);
}

/**
 * The delivery's installation (its granted permissions), read by id through the broker's
 * installation cache: a cached one costs nothing, and cold reads of one installation at the same
 * moment share one lookup. `lookup` wraps the platform call (a budget share); default: as is.
 */
export async function installationById(
  deps: InstallationDeps,
  platform: PlatformSettings,
  app: AppCredentials,
  target: DeliveredInstallation,
  lookup: (call: () => Promise<Installation>) => Promise<Installation> = (call) => call(),
): Promise<Installation> {
  const key = installationByIdKey(deps, platform, app, target.installationId);
  const cached = deps.installations.get(key);
  if (cached) return cached;
  return deps.installations.load(key, async () => {
    return lookup(() =>
      deps.appJwt.withJwt(app, (appJwt) => findInstallation({ client: deps.clientFor(platform), appJwt, retry: deps.retry, installationId: target.installationId, owner: target.owner, repo: target.repo, now: deps.now })),
    );
  });
}
