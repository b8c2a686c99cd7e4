import type { RequestHandler } from "express";
import type { TokenResponse } from "../../shared/types.js";
import type { BrokerContext } from "../context.js";
import { mintRepositoryToken } from "../github/repository-token.js";
import { sendJson } from "../http/send-json.js";
import { fingerprint } from "../log.js";
import { verifyOidcToken } from "../oidc/verify-oidc-token.js";
import { permissionsToMint } from "../token/permissions-to-mint.js";
import { readTokenRequest } from "../token/read-token-request.js";
import { checkAllowlist, matchRepository, readRepositoryIdentity, requireApp, requireTokenPermissions, trustedPlatforms } from "../token/trust.js";

/**
 * POST /token: the spec's ladder, top to bottom (DESIGN.md order of checks):
 * fields → TOKEN_PERMISSIONS → OIDC verification (with the repository and owner ids) → repository
 * claim → allowlist → App configured → installation lookup (on the claims' owner id) → mint by the
 * claims' repository id (its answer must name that repository). The permissions asked for are the
 * grant (TOKEN_PERMISSIONS ∩ installation), or exactly the body's `permissions` when it names some
 * and the grant covers them (else 403 permissions_not_granted, decided before any mint).
 */
export function tokenRoute(ctx: BrokerContext): RequestHandler {
  return async (req, res) => {
    const settings = ctx.settings();
    const body = readTokenRequest(req.body as Record<string, unknown>);
    const requested = requireTokenPermissions(settings);

    const { claims, trusted } = await verifyOidcToken({
      token: body.oidcToken,
      issuers: trustedPlatforms(settings).map((platform) => ({ issuer: platform.issuer, keys: ctx.keySetFor(platform.issuer), platform })),
      audiences: settings.audiences,
      now: ctx.now,
      snapshot: ctx.jwksSnapshot(settings),
    });
    const ids = readRepositoryIdentity(claims);
    const repository = matchRepository(claims.repository, body.owner, body.repo);
    checkAllowlist(settings.allowedRepositories, repository);

    const platform = trusted.platform;
    const app = requireApp(platform);
    const { installation, minted } = await mintRepositoryToken(ctx, {
      platform,
      app,
      owner: body.owner,
      repo: body.repo,
      ids,
      requestId: res.locals.requestId as string | undefined,
      deadlineAt: res.locals.deadlineAt as number | undefined,
      permissions: (installed) => permissionsToMint({ tokenPermissions: requested, installation: installed, requested: body.permissions }),
    });

    ctx.log.info(
      {
        audit: "token_minted",
        repository,
        repository_id: ids.repositoryId,
        repository_owner_id: ids.ownerId,
        installation_id: installation.id,
        permissions: minted.permissions,
        ...(body.permissions ? { requested_permissions: body.permissions } : {}),
        platform: platform.name,
        issuer: claims.iss,
        sub: claims.sub,
        ref: claims.ref,
        run_id: claims.run_id,
        workflow_ref: claims.workflow_ref,
        actor: claims.actor,
        request_ref: body.ref,
        request_run_id: body.runId,
        request_sha: body.sha,
        expires_at: minted.expires_at,
        token_sha256: fingerprint(minted.token),
        request_id: res.locals.requestId,
      },
      "installation token minted",
    );
    ctx.metrics.tokensMinted.inc({ platform: platform.name });
    // The spec's three fields, then the additive ones the action outputs (installation-id, app-slug,
    // permissions: the token's real permissions, as the mint answered them).
    const answer: TokenResponse = {
      token: minted.token,
      expires_at: minted.expires_at,
      repository,
      installation_id: installation.id,
      ...(installation.appSlug !== undefined ? { app_slug: installation.appSlug } : {}),
      permissions: minted.permissions,
    };
    res.setHeader("Cache-Control", "no-store");
    sendJson(res, 200, answer);
  };
}
