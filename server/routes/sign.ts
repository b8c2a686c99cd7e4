import type { RequestHandler } from "express";
import { BrokerError } from "../../shared/broker-error.js";
import type { SignResponse } from "../../shared/types.js";
import type { BrokerContext } from "../context.js";
import { requireTriggerSecret } from "../http/bearer.js";
import { jsonObjectBody, MIB } from "../http/json-body.js";
import { sendJson } from "../http/send-json.js";
import { mintForRepository } from "../installation/mint-for-repository.js";
import { mintTarget, repositoryInstallation } from "../installation/repository-installation.js";
import { fingerprint } from "../log.js";
import { createCommit } from "../sign/create-commit.js";
import { readSignRequest } from "../sign/read-sign-request.js";
import { checkAllowlist, requireApp } from "../token/trust.js";

/** docs/operations.md#running-it: /sign carries whole files, base64-encoded. */
export const SIGN_BODY_LIMIT = 20 * MIB;

/**
 * POST /sign, top to bottom (docs/design.md#order-of-checks): secret configured → bearer → body →
 * fields → SIGN_ALLOWED_REPOSITORIES → App configured → token (contents: write only) →
 * createCommitOnBranch.
 */
export function signRoute(ctx: BrokerContext): RequestHandler[] {
  return [requireTriggerSecret(ctx, "sign_disabled"), jsonObjectBody(SIGN_BODY_LIMIT), sign(ctx)];
}

function sign(ctx: BrokerContext): RequestHandler {
  return async (req, res) => {
    const command = readSignRequest(req.body as Record<string, unknown>);
    const settings = ctx.settings();
    checkAllowlist(settings.signAllowedRepositories, command.repository);
    const platform = settings.main;
    const app = requireApp(platform);

    // Spec 2.6: /sign ignores TOKEN_PERMISSIONS and always mints contents: write only.
    let minted;
    try {
      const target = await mintTarget(ctx, { platform, app, owner: command.owner, repo: command.name, deadlineAt: res.locals.deadlineAt as number | undefined });
      // A mint refused on a cached installation (404/422) goes round once more, from a fresh lookup.
      for (let afresh = false; ; afresh = true) {
        const found = await repositoryInstallation(ctx, target, afresh);
        const outcome = await mintForRepository(ctx, target, { found, permissions: { contents: "write" }, requestId: res.locals.requestId as string | undefined });
        if ("minted" in outcome) {
          ({ minted } = outcome);
          break;
        }
        if (!outcome.installationStale || !found.cached) throw outcome.refused;
      }
    } catch (error) {
      // The App key's store not signing is not the platform refusing: told as such, with its Retry-After.
      if (error instanceof BrokerError && error.code === "app_key_unavailable") throw error;
      // Whatever stopped the mint (not installed, lookup or mint refused), /sign has one word for it;
      // a transient failure keeps its Retry-After.
      if (!(error instanceof BrokerError)) ctx.log.error({ err: error, request_id: res.locals.requestId }, "unexpected failure while minting for /sign");
      const detail = error instanceof BrokerError ? error.message : "unexpected failure";
      const retryAfter = error instanceof BrokerError ? error.retryAfter : undefined;
      throw new BrokerError("installation_token_failed", { detail, cause: error, retryAfter });
    }

    const commit = await createCommit({
      request: ctx.requestFor(platform),
      graphqlUrl: platform.graphqlUrl,
      token: minted.token,
      command,
      log: ctx.log,
      requestId: res.locals.requestId as string | undefined,
    });

    ctx.log.info(
      {
        audit: "commit_signed",
        repository: command.repository,
        branch: command.branch,
        expected_head_oid: command.expectedHeadOid,
        oid: commit.oid,
        additions: command.additions.length,
        deletions: command.deletions.length,
        token_sha256: fingerprint(minted.token),
        request_id: res.locals.requestId,
      },
      "commit created",
    );
    const answer: SignResponse = { ok: true, commit };
    res.setHeader("Cache-Control", "no-store");
    sendJson(res, 200, answer);
  };
}
