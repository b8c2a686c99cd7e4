import { BrokerError } from "../../shared/broker-error.js";
import type { Permissions } from "../../shared/token-permissions.js";
import type { Installation } from "./find-installation.js";
import { mintInstallationToken, type MintedToken } from "./mint-installation-token.js";
import type { FoundInstallation, InstallationDeps, MintTarget } from "./repository-installation.js";
import { mintedForScope, mintedForScopes, type OtherRepository } from "./repository-scope.js";
import { revokeInstallationToken } from "./revoke-installation-token.js";

export interface MintOrder {
  /** From repositoryInstallation: the installation to mint on and its cache entry. */
  found: FoundInstallation;
  /** What to ask for: decided (and refused, if so) by the caller before the mint. */
  permissions: Permissions;
  /** /token's other `repositories` (by id, the claims' ids known): the one token covers them too. */
  others?: readonly OtherRepository[];
  /** For the log lines of a revocation. */
  requestId?: string;
}

/**
 * What the mint came to. `refused`: nothing is handed out (a token minted anyway was revoked).
 * `installationStale`: the platform refused the mint on this installation (404/422: it may be gone
 * or changed since it was looked up), so one taken from the cache is worth a fresh lookup.
 * `staleOthers`: other repositories whose lookup is in doubt (renamed, re-created, removed from the
 * installation), for the caller to look them up again.
 */
export type MintOutcome =
  | { installation: Installation; minted: MintedToken }
  | { refused: BrokerError; installationStale: boolean; staleOthers: readonly OtherRepository[] };

/**
 * The mint on one installation — by repository id when the ids are known (/token), by name
 * otherwise (/sign) — whose answer must name exactly that repository (and each of `others`).
 * Anything else is 404 app_not_installed with nothing handed out: a token minted anyway is revoked
 * at once. A mint that failed other than transiently drops the cached installation, which may be
 * gone or changed; a 401 to the App JWT is handled by `appJwt.withJwt` (app-jwt.ts). Every
 * failure but the platform's refusal (404/422) is thrown.
 */
export async function mintForRepository(deps: InstallationDeps, target: MintTarget, order: MintOrder): Promise<MintOutcome> {
  const { installation, cacheKey } = order.found;
  const { client } = target;
  const others = target.ids ? (order.others ?? []) : [];
  let minted: MintedToken;
  try {
    minted = await deps.appJwt.withJwt(target.app, (appJwt) =>
      mintInstallationToken({
        client,
        appJwt,
        installationId: installation.id,
        ...(target.ids ? { repositoryIds: [target.ids.repositoryId, ...others.map((other) => other.id)] } : { repositoryName: target.repo }),
        permissions: order.permissions,
        retry: deps.retry,
        now: deps.now,
        deadlineAt: target.deadlineAt,
      }),
    );
  } catch (error) {
    // A transient failure (5xx, network, rate limit: it carries a Retry-After) says nothing about
    // the installation: keeping it spares a burst of lookups while the platform is limiting us.
    if (!(error instanceof BrokerError && error.retryAfter !== undefined)) deps.installations.drop(cacheKey);
    // A 422 to a mint by ids may be about one of the others (removed from the installation): they are in doubt too.
    if (error instanceof BrokerError && error.code === "app_not_installed") return { refused: error, installationStale: true, staleOthers: others };
    throw error;
  }
  if (others.length > 0 && target.ids) {
    const checked = mintedForScopes(minted.repositories, { ...target, ids: target.ids }, others);
    if (!checked.ok) {
      await revokeInstallationToken({ client, token: minted.token, log: deps.log, why: "mint answer does not name the repositories asked for", requestId: order.requestId });
      if (checked.stale.length > 0) {
        // The caller's own entry may be right: only the others' names are in doubt (looked up again on the next request).
        const refused = new BrokerError("policy_unavailable", { detail: `mint answer names ${checked.stale.map((other) => other.id).join(", ")} otherwise than looked up`, retryAfter: 1 });
        return { refused, installationStale: false, staleOthers: checked.stale };
      }
      deps.installations.drop(cacheKey);
      throw new BrokerError("app_not_installed", { detail: "mint answer does not name the repositories asked for" });
    }
  } else if (!mintedForScope(minted.repositories, target)) {
    deps.installations.drop(cacheKey);
    await revokeInstallationToken({ client, token: minted.token, log: deps.log, why: "mint answer names another repository", requestId: order.requestId });
    throw new BrokerError("app_not_installed", { detail: "mint answer does not name the repository asked for" });
  }
  return { installation, minted };
}
