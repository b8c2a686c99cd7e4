import { BrokerError } from "../../shared/broker-error.js";
import type { Permissions } from "../../shared/token-permissions.js";
import type { AppCredentials } from "../app-credentials.js";
import type { InstallationDeps } from "../installation/repository-installation.js";
import { installationById, installationByIdKey } from "../installation/installation-by-id.js";
import { intersectPermissions } from "../installation/intersect-permissions.js";
import { mintInstallationToken, type MintedToken } from "../installation/mint-installation-token.js";
import type { PlatformSettings } from "../settings.js";
import type { BranchPush } from "./read-push.js";

/** What a push's mint uses of the broker's context (passed in: docs/design.md#layers). */
export type PushMintDeps = InstallationDeps;

/**
 * What update-branch needs: `pull_requests: write` (the documented permission), and
 * `contents: write` because the update is a merge commit written to the pull request's branch.
 */
export const PUSH_PERMISSIONS = { contents: "write", pull_requests: "write" } as const;

/**
 * What the push token asks for, given what the installation holds: PUSH_PERMISSIONS, and
 * `workflows: write` when the installation holds it — a merge that brings changes of
 * `.github/workflows/` into a pull request's branch is refused without it. Never more than held.
 */
export function pushPermissions(granted: Record<string, string>): Permissions {
  const wanted: Permissions = { ...PUSH_PERMISSIONS };
  if (granted.workflows === "write") wanted.workflows = "write";
  return intersectPermissions(wanted, granted);
}

/**
 * A fresh token for the pushed repository from the delivery's own installation (`installation.id`
 * of the payload): the installation is read by id (cached like the repository lookup, README
 * "Caches") to learn whether it holds `workflows: write`, then the mint. Any failure is 502
 * installation_token_failed (after a refused App JWT was sent once more with a rotation's other key: app-jwt.ts).
 */
export async function mintForPush(ctx: PushMintDeps, platform: PlatformSettings, app: AppCredentials, push: BranchPush): Promise<MintedToken> {
  const cacheKey = installationByIdKey(ctx, platform, app, push.installationId);
  try {
    const installation = await installationById(ctx, platform, app, { installationId: push.installationId, owner: push.owner, repo: push.name });
    return await ctx.appJwt.withJwt(app, (appJwt) =>
      mintInstallationToken({
        client: ctx.clientFor(platform),
        appJwt,
        installationId: push.installationId,
        repositoryName: push.name,
        permissions: pushPermissions(installation.permissions),
        retry: ctx.retry,
      }),
    );
  } catch (error) {
    ctx.installations.drop(cacheKey);
    const detail = error instanceof BrokerError ? error.message : "unexpected failure";
    throw new BrokerError("installation_token_failed", { detail, cause: error });
  }
}
