import type { RequestHandler } from "express";
import type { TokenResponse } from "../../shared/types.js";
import type { BrokerContext } from "../context.js";
import type { Installation } from "../installation/find-installation.js";
import { mintForRepository } from "../installation/mint-for-repository.js";
import { withMintShare } from "../installation/mint-share.js";
import type { MintedToken } from "../installation/mint-installation-token.js";
import { mintTarget, repositoryInstallation } from "../installation/repository-installation.js";
import { sendJson } from "../http/send-json.js";
import { fingerprint } from "../log.js";
import { verifyOidcToken } from "../oidc/verify-oidc-token.js";
import { applyPolicies, type PolicyOutcome } from "../policy/apply-policies.js";
import { readRuleField } from "../policy/read-rule-field.js";
import { permissionsToMint } from "../token/permissions-to-mint.js";
import { readTokenRequest } from "../token/read-token-request.js";
import { claimOidcToken } from "../token/claim-oidc-token.js";
import { rememberVerifiedCaller } from "../token/audit-denial.js";
import { checkAllowlist, matchRepository, readRepositoryIdentity, requireApp, requireTokenPermissions, trustedPlatforms } from "../token/trust.js";

/**
 * POST /token: the ladder, top to bottom (docs/design.md#order-of-checks):
 * fields → TOKEN_PERMISSIONS → OIDC verification (with the repository and owner ids) → repository
 * claim → allowlist → App configured → one mint per OIDC token → the repository's share of the App's
 * budget (server/installation/mint-share.ts) → installation lookup (on the claims' owner id) → mint by the
 * claims' repository id (its answer must name that repository). Between lookup and mint, the trust
 * policies (server/policy/apply-policies.ts): a rule must hold, or nothing is minted. The
 * permissions asked for are the grant (TOKEN_PERMISSIONS ∩ each policy rule that applies ∩
 * installation), or exactly the body's `permissions` when it names some and the grant covers them
 * (else 403 permissions_not_granted naming what withheld each, decided before any mint).
 * Each rung is one call whose result the next takes (docs/design.md#layers): installation →
 * policies → permissions → mint; a stale cached installation sends the route round once more.
 */
export function tokenRoute(ctx: BrokerContext): RequestHandler {
  return async (req, res) => {
    const settings = ctx.settings();
    const body = readTokenRequest(req.body as Record<string, unknown>);
    const rule = readRuleField(req.body as Record<string, unknown>);
    const requested = requireTokenPermissions(settings);

    const { claims, trusted } = await verifyOidcToken({
      token: body.oidcToken,
      issuers: trustedPlatforms(settings).map((platform) => ({ issuer: platform.issuer, keys: ctx.keySetFor(platform.issuer), platform })),
      audiences: settings.audiences,
      now: ctx.now,
      snapshot: ctx.jwksSnapshot(settings),
    });
    rememberVerifiedCaller(res, { repository: claims.repository as string | undefined, rule, issuer: claims.iss as string, sub: claims.sub });
    const ids = readRepositoryIdentity(claims);
    const repository = matchRepository(claims.repository, body.owner, body.repo);
    checkAllowlist(settings.allowedRepositories, repository);
    // The other repositories the token would also cover are held to the same allowlist (never widened).
    for (const name of body.repositories ?? []) checkAllowlist(settings.allowedRepositories, `${body.owner}/${name}`, name);

    const platform = trusted.platform;
    const app = requireApp(platform);
    // The token is verified and the cheap checks passed: it may now take its one mint (409
    // oidc_token_replayed if it already has). Never earlier: an unverified token must not occupy an id.
    const claim = await claimOidcToken(ctx, settings, claims, body.oidcToken);
    // Set when the permissions are decided, just before the mint is sent: a failure before it (a
    // policy's denial, a lookup that failed) hands the claim back, so the token is not spent.
    let mintSent = false;
    let installation: Installation;
    let minted: MintedToken;
    let applied: PolicyOutcome | null;
    try {
      const target = await mintTarget(ctx, { platform, app, owner: body.owner, repo: body.repo, ids, deadlineAt: res.locals.deadlineAt as number | undefined });
      // The rest spends the App's budget as this repository's and owner's: its share is decided now,
      // before any platform call (429 installation_tokens_limited when spent and its queue full).
      ({ installation, minted, applied } = await withMintShare(ctx, target, async () => {
        // A cached installation may be stale (its permissions changed, its repositories moved): a mint
        // refused on it (404/422) goes round once more, looked up afresh, decided again, minted again.
        for (let afresh = false; ; afresh = true) {
          const found = await repositoryInstallation(ctx, target, afresh);
          // Decided before the mint: a refused request (403 permissions_not_granted, or a trust
          // policy's 403/503) says nothing about the installation, so the cached one is kept.
          const applied = await applyPolicies(ctx, {
            settings, platform, app, installation: found.installation, claims, owner: body.owner, repo: body.repo, ids, rule, targets: body.repositories, deadlineAt: target.deadlineAt,
          });
          // TOKEN_PERMISSIONS ∩ each rule that applies ∩ the installation (docs/design.md#decisions-where-the-contract-was-open: everything only narrows).
          // With other repositories: ∩ what each of them lends (its consenting rule ∩ its owner rule).
          const policyCeilings = [...(applied?.decision.ceilings ?? []), ...(applied?.targets ?? []).map((other) => other.ceiling)];
          const permissions = permissionsToMint({ tokenPermissions: requested, policyCeilings, installation: found.installation.permissions, requested: body.permissions });
          const others = (applied?.targets ?? []).map(({ target: other }) => ({ id: other.id, name: other.name }));
          mintSent = true;
          const outcome = await mintForRepository(ctx, target, { found, permissions, others, requestId: res.locals.requestId as string | undefined });
          if ("minted" in outcome) return { ...outcome, applied };
          // The other repositories in doubt are looked up again (by this round, or the next request).
          for (const other of outcome.staleOthers) ctx.policies.targets.drop(ctx.policies.targets.key(platform.apiBase, found.installation.id, body.owner, other.name));
          if (!outcome.installationStale || !found.cached) throw outcome.refused;
        }
      }));
    } catch (error) {
      if (!mintSent) await claim.release();
      throw error;
    }

    ctx.log.info(
      {
        audit: "token_minted",
        repository,
        repository_id: ids.repositoryId,
        repository_owner_id: ids.ownerId,
        installation_id: installation.id,
        permissions: minted.permissions,
        ...(applied ? { policy_rule: applied.decision.rule, owner_policy_rule: applied.decision.ownerRule, policy_sha: applied.repositorySha, owner_policy_sha: applied.ownerSha } : {}),
        ...(body.permissions ? { requested_permissions: body.permissions } : {}),
        ...(applied?.targets ? { repositories: applied.targets.map((target) => ({ repository: target.fullName, repository_id: target.target.id, policy_rule: target.rule, owner_policy_rule: target.ownerRule, policy_sha: target.sha })) } : {}),
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
    // The API's three fields, then the additive ones the action outputs (installation-id, app-slug,
    // permissions: the token's real permissions, as the mint answered them).
    const answer: TokenResponse = {
      token: minted.token,
      expires_at: minted.expires_at,
      repository,
      installation_id: installation.id,
      ...(installation.appSlug !== undefined ? { app_slug: installation.appSlug } : {}),
      permissions: minted.permissions,
      // Only when the request named other repositories: every one the token covers, the caller's first.
      ...(applied?.targets ? { repositories: [repository, ...applied.targets.map((target) => target.fullName)] } : {}),
    };
    res.setHeader("Cache-Control", "no-store");
    sendJson(res, 200, answer);
  };
}
