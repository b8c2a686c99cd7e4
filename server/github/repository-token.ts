import { BrokerError } from "../../shared/broker-error.js";
import type { Permissions } from "../../shared/token-permissions.js";
import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import type { PlatformSettings } from "../settings.js";
import type { PlatformClient } from "./platform-client.js";
import { findInstallation, type Installation } from "./find-installation.js";
import { mintInstallationToken, type MintedToken } from "./mint-installation-token.js";
import { checkNotInstalled } from "./not-installed-check.js";
import type { LookupSlot } from "./owner-lookup-limiter.js";
import { installationServes, installationSubject, mintedForScope, mintedForScopes, type OtherRepository, type RepositoryScope } from "./repository-scope.js";
import { revokeInstallationToken } from "./revoke-installation-token.js";

/** Time kept back from the request's deadline to map a platform failure and send the answer. */
export const ANSWER_RESERVE_MS = 150;

export interface RepositoryTokenInput extends RepositoryScope {
  platform: PlatformSettings;
  app: AppCredentials;
  /**
   * What to ask for, given what the installation was granted (and the installation itself: /token's
   * trust policies are read with its reader token). May refuse by throwing: nothing is minted then.
   */
  permissions: (granted: Record<string, string>, installation: Installation) => Permissions | Promise<Permissions>;
  /**
   * /token's other `repositories` (by id, the claims' ids known), asked once `permissions` has
   * returned (the trust policies found them and their consent): the one token covers them too.
   */
  others?: () => readonly OtherRepository[];
  /** The mint's answer named one of `others` otherwise (renamed, re-created since it was looked up): the token is revoked, then this is told. */
  othersStale?: (stale: readonly OtherRepository[]) => void;
  /** For the log lines of a revocation. */
  requestId?: string;
  /**
   * Epoch ms by which the platform calls must be answered (the request's deadline), retries and
   * waits included; undefined = each attempt has its own timeout only. A lookup shared by
   * concurrent requests runs under the deadline of the one that started it.
   */
  deadlineAt?: number;
}

/**
 * A fresh installation token for one repository: the installation (cached briefly, see README
 * "Caches"), which must be on the repository's owner, then the mint — by repository id when the
 * ids are known (/token), by name otherwise (/sign) — whose answer must name exactly that
 * repository. Anything else is 404 app_not_installed with nothing handed out: a token minted
 * anyway is revoked at once. A mint that failed other than transiently drops the cached
 * installation, which may be gone or changed (a 404/422 on a cached one is asked again once, from a fresh lookup); a 401 drops the
 * App JWT (e.g. the platform's clock disagrees with ours). With the claims' ids (/token): a
 * lookup answered "not installed" is remembered a minute (not-installed-cache.ts), and an owner's
 * lookups that find nothing are held to its share of the App's budget (503 installation_lookups_limited).
 */
export async function mintRepositoryToken(ctx: BrokerContext, request: RepositoryTokenInput): Promise<{ installation: Installation; minted: MintedToken }> {
  // The platform calls stop a little before the request's deadline, so the route answers its own
  // code (with Retry-After) rather than the request being cut off at the deadline itself.
  const input = request.deadlineAt === undefined ? request : { ...request, deadlineAt: request.deadlineAt - ANSWER_RESERVE_MS };
  const { platform, app } = input;
  const scope: RepositoryScope = { owner: input.owner, repo: input.repo, ids: input.ids };
  const client = ctx.clientFor(platform);
  const appJwt = await ctx.appJwt.jwtFor(app);
  const cacheKey = ctx.installations.key(platform.apiBase, app.appId, installationSubject(scope));
  const cached = ctx.installations.get(cacheKey);
  if (cached) {
    // A cached installation may be stale (its permissions changed, its repositories moved): a mint
    // refused with 404/422 is asked again once, from a fresh lookup, with every check made again.
    const outcome = await mintChecked(ctx, input, scope, { client, appJwt, cacheKey, installation: cached });
    if (!("refused" in outcome)) return outcome;
  }
  // A repository the App is not on was answered so less than a minute ago: no lookup (anyone can
  // replay a token of their own; docs/security.md). Only /token's, keyed by the claims' ids.
  // Shared by the instances when a shared store is configured (not-installed-check.ts).
  const ids = scope.ids;
  const memo = ids ? await checkNotInstalled(ctx, cacheKey, ids.ownerId) : undefined;
  if (memo === "not-installed") throw new BrokerError("app_not_installed", { detail: "not installed (answered less than a minute ago)" });
  // Concurrent misses for one key share one lookup (docs/operations.md#caches); a failure is not cached.
  const installation = await ctx.installations.shared(cacheKey, async () => {
    // One owner's lookups that find nothing stay within its share of the App's budget
    // (owner-lookup-limiter.ts); one that finds the App installed is not counted.
    let slot: LookupSlot | undefined;
    if (ids) {
      const taken = await ctx.ownerLookups.take(`${platform.apiBase}\u0000${ids.ownerId}`);
      if (!("settle" in taken)) throw new BrokerError("installation_lookups_limited", { detail: `owner ${ids.ownerId}`, retryAfter: taken.retryAfterSeconds });
      slot = taken;
    }
    let found: Installation | undefined;
    try {
      found = await findInstallation({ client, appJwt, retry: ctx.retry, installationId: platform.installationId, owner: scope.owner, repo: scope.repo, now: ctx.now, deadlineAt: input.deadlineAt });
    } catch (error) {
      ctx.appJwt.noteFailure(app, error);
      if (error instanceof BrokerError && error.code === "app_not_installed") await memo?.remember();
      throw error;
    } finally {
      slot?.settle(found !== undefined && installationServes(found, scope));
    }
    if (!installationServes(found, scope)) {
      // ENT_APP_INSTALLATION_ID names another owner's installation, or the owner is not who the claims say.
      await memo?.remember();
      throw new BrokerError("app_not_installed", { detail: "installation is on another account" });
    }
    ctx.installations.set(cacheKey, found);
    return found;
  });
  const outcome = await mintChecked(ctx, input, scope, { client, appJwt, cacheKey, installation });
  if ("refused" in outcome) throw outcome.refused;
  return outcome;
}

interface MintFrom {
  client: PlatformClient;
  appJwt: string;
  cacheKey: string;
  installation: Installation;
}

/**
 * The mint on one installation, its answer checked; any failure drops the cached installation. The
 * platform's refusal (404/422 → app_not_installed) is returned, for the caller to decide on a
 * fresh lookup; every other failure is thrown.
 */
async function mintChecked(
  ctx: BrokerContext,
  input: RepositoryTokenInput,
  scope: RepositoryScope,
  from: MintFrom,
): Promise<{ installation: Installation; minted: MintedToken } | { refused: BrokerError }> {
  const { client, appJwt, cacheKey, installation } = from;
  // Decided before the try: a refused request (403 permissions_not_granted, or a trust policy's
  // 403/503) says nothing about the installation, so it must not drop the cached one (and cost the
  // next call a lookup).
  const permissions = await input.permissions(installation.permissions, installation);
  const others = scope.ids ? (input.others?.() ?? []) : [];
  let minted: MintedToken;
  try {
    minted = await mintInstallationToken({
      client,
      appJwt,
      installationId: installation.id,
      ...(scope.ids ? { repositoryIds: [scope.ids.repositoryId, ...others.map((other) => other.id)] } : { repositoryName: scope.repo }),
      permissions,
      retry: ctx.retry,
      now: ctx.now,
      deadlineAt: input.deadlineAt,
    });
  } catch (error) {
    // A transient failure (5xx, network, rate limit: it carries a Retry-After) says nothing about
    // the installation: keeping it spares a burst of lookups while the platform is limiting us.
    if (!(error instanceof BrokerError && error.retryAfter !== undefined)) ctx.installations.drop(cacheKey);
    ctx.appJwt.noteFailure(input.app, error);
    if (error instanceof BrokerError && error.code === "app_not_installed") {
      // A 422 to a mint by ids may be about one of the others (removed from the installation): look them up again too.
      if (others.length > 0) input.othersStale?.(others);
      return { refused: error };
    }
    throw error;
  }
  if (others.length > 0 && scope.ids) {
    const checked = mintedForScopes(minted.repositories, { ...scope, ids: scope.ids }, others);
    if (!checked.ok) {
      await revokeInstallationToken({ client, token: minted.token, log: ctx.log, why: "mint answer does not name the repositories asked for", requestId: input.requestId });
      if (checked.stale.length > 0) {
        // The caller's own entry may be right: only the others' names are in doubt (looked up again on the next request).
        input.othersStale?.(checked.stale);
        throw new BrokerError("policy_unavailable", { detail: `mint answer names ${checked.stale.map((other) => other.id).join(", ")} otherwise than looked up`, retryAfter: 1 });
      }
      ctx.installations.drop(cacheKey);
      throw new BrokerError("app_not_installed", { detail: "mint answer does not name the repositories asked for" });
    }
  } else if (!mintedForScope(minted.repositories, scope)) {
    ctx.installations.drop(cacheKey);
    await revokeInstallationToken({ client, token: minted.token, log: ctx.log, why: "mint answer names another repository", requestId: input.requestId });
    throw new BrokerError("app_not_installed", { detail: "mint answer does not name the repository asked for" });
  }
  return { installation, minted };
}
