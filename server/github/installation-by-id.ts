import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import type { PlatformSettings } from "../settings.js";
import { findInstallation, type Installation } from "./find-installation.js";

/** What a webhook delivery names: its installation (`installation.id`) and the repository it is about. */
export interface DeliveredInstallation {
  installationId: number;
  owner: string;
  repo: string;
}

/** The installation cache's key of an installation read by id (docs/operations.md#caches). */
export function installationByIdKey(ctx: BrokerContext, platform: PlatformSettings, app: AppCredentials, installationId: number): string {
  return ctx.installations.key(platform.apiBase, app.appId, `installation:${installationId}`);
}

/**
 * The delivery's installation (its granted permissions), read by id through the broker's
 * installation cache: a cached one costs nothing, and cold reads of one installation at the same
 * moment share one lookup. `lookup` wraps the platform call (a budget share); default: as is.
 */
export async function installationById(
  ctx: BrokerContext,
  platform: PlatformSettings,
  app: AppCredentials,
  target: DeliveredInstallation,
  lookup: (call: () => Promise<Installation>) => Promise<Installation> = (call) => call(),
): Promise<Installation> {
  const key = installationByIdKey(ctx, platform, app, target.installationId);
  const cached = ctx.installations.get(key);
  if (cached) return cached;
  return ctx.installations.shared(key, async () => {
    const appJwt = await ctx.appJwt.jwtFor(app);
    const found = await lookup(() => findInstallation({ client: ctx.clientFor(platform), appJwt, retry: ctx.retry, installationId: target.installationId, owner: target.owner, repo: target.repo, now: ctx.now }));
    ctx.installations.set(key, found);
    return found;
  });
}
