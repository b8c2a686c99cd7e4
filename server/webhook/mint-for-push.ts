import { BrokerError } from "../../shared/broker-error.js";
import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import { mintInstallationToken, type MintedToken } from "../github/mint-installation-token.js";
import type { PlatformSettings } from "../settings.js";
import type { BranchPush } from "./read-push.js";

/**
 * What update-branch needs: `pull_requests: write` (the documented permission), and
 * `contents: write` because the update is a merge commit written to the pull request's branch.
 */
export const PUSH_PERMISSIONS = { contents: "write", pull_requests: "write" } as const;

/**
 * A fresh token for the pushed repository from the delivery's own installation (`installation.id`
 * of the payload, so no lookup). Any failure is 502 installation_token_failed; a 401 drops the
 * App JWT so the next delivery signs afresh.
 */
export async function mintForPush(ctx: BrokerContext, platform: PlatformSettings, app: AppCredentials, push: BranchPush): Promise<MintedToken> {
  try {
    return await mintInstallationToken({
      client: ctx.clientFor(platform),
      appJwt: await ctx.appJwt.jwtFor(app),
      installationId: push.installationId,
      repositoryName: push.name,
      permissions: { ...PUSH_PERMISSIONS },
      retry: ctx.retry,
    });
  } catch (error) {
    ctx.appJwt.noteFailure(app, error);
    const detail = error instanceof BrokerError ? error.message : "unexpected failure";
    throw new BrokerError("installation_token_failed", { detail, cause: error });
  }
}
