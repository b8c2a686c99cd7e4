import { BrokerError } from "../../shared/broker-error.js";
import type { AppCredentials } from "../app-credentials.js";
import type { AppJwtSigner } from "../github/app-jwt.js";
import type { InstallationCache } from "./installation-cache.js";
import type { LookupSlot, OwnerLookupLimiter } from "../github/owner-lookup-limiter.js";
import type { PlatformClient } from "../github/platform-client.js";
import type { RetryPolicy } from "../github/platform-request.js";
import type { Logger } from "../log.js";
import type { PlatformSettings } from "../settings.js";
import { findInstallation, type Installation } from "./find-installation.js";
import { checkNotInstalled, type NotInstalledDeps } from "./not-installed-check.js";
import { installationServes, installationSubject, type RepositoryScope } from "./repository-scope.js";

/** Time kept back from the request's deadline to map a platform failure and send the answer. */
const ANSWER_RESERVE_MS = 150;

/**
 * What the token operations use of the broker's context, passed in (a lower layer never imports
 * the composition root: docs/design.md#layers).
 */
export interface InstallationDeps extends NotInstalledDeps {
  clientFor(platform: PlatformSettings): PlatformClient;
  appJwt: AppJwtSigner;
  installations: InstallationCache;
  ownerLookups: OwnerLookupLimiter;
  retry: RetryPolicy;
  now: () => number;
  log: Logger;
}

/** One repository to mint for, with what every platform call on its behalf needs. */
export interface MintTarget extends RepositoryScope {
  platform: PlatformSettings;
  app: AppCredentials;
  client: PlatformClient;
  /** Epoch ms by which the platform calls must be answered, ANSWER_RESERVE_MS already kept back; undefined = none. */
  deadlineAt?: number;
}

/**
 * The target of a request: its platform client and a deadline that stops the platform calls a little before the request's own, so the route answers its own code (with
 * Retry-After) rather than the request being cut off at the deadline itself. A lookup shared by
 * concurrent requests runs under the deadline of the one that started it. The App JWT is signed
 * here (or taken from its cache), so a key store that cannot sign answers 503 before any platform
 * call; each call then sends it through `appJwt.withJwt` (a refused JWT, a rotation: app-jwt.ts).
 */
export async function mintTarget(
  deps: Pick<InstallationDeps, "clientFor" | "appJwt">,
  request: RepositoryScope & { platform: PlatformSettings; app: AppCredentials; deadlineAt?: number },
): Promise<MintTarget> {
  const { platform, app, owner, repo, ids } = request;
  const client = deps.clientFor(platform);
  await deps.appJwt.jwtFor(app);
  return { platform, app, owner, repo, ...(ids ? { ids } : {}), client, deadlineAt: request.deadlineAt === undefined ? undefined : request.deadlineAt - ANSWER_RESERVE_MS };
}

export interface FoundInstallation {
  installation: Installation;
  /** Taken from the cache: it may be stale (a mint refused on it is asked again once, from a fresh lookup). */
  cached: boolean;
  cacheKey: string;
}

/**
 * The installation on the repository's owner (cached briefly, docs/operations.md#caches), or 404
 * app_not_installed. `afresh`: the cached one was refused by the mint, so look it up again. With
 * the claims' ids (/token): a lookup answered "not installed" is remembered a minute
 * (not-installed-cache.ts), and an owner's lookups that find nothing are held to its share of the
 * App's budget (503 installation_lookups_limited).
 */
export async function repositoryInstallation(deps: InstallationDeps, target: MintTarget, afresh = false): Promise<FoundInstallation> {
  const { platform, app } = target;
  const scope: RepositoryScope = { owner: target.owner, repo: target.repo, ids: target.ids };
  const cacheKey = deps.installations.key(platform.apiBase, app.appId, installationSubject(scope));
  const cached = afresh ? undefined : deps.installations.get(cacheKey);
  if (cached) return { installation: cached, cached: true, cacheKey };
  // A repository the App is not on was answered so less than a minute ago: no lookup (anyone can
  // replay a token of their own; docs/security.md). Only /token's, keyed by the claims' ids.
  // Shared by the instances when a shared store is configured (not-installed-check.ts).
  const ids = scope.ids;
  const memo = ids ? await checkNotInstalled(deps, cacheKey, ids.ownerId) : undefined;
  if (memo === "not-installed") throw new BrokerError("app_not_installed", { detail: "not installed (answered less than a minute ago)" });
  // Concurrent misses for one key share one lookup (docs/design.md#caches); a failure is not kept,
  // nor is a lookup that a drop (a refused mint) overtook.
  const installation = await deps.installations.load(cacheKey, async () => {
    // One owner's lookups that find nothing stay within its share of the App's budget
    // (owner-lookup-limiter.ts); one that finds the App installed is not counted.
    let slot: LookupSlot | undefined;
    if (ids) {
      const taken = await deps.ownerLookups.take(`${platform.apiBase}\u0000${ids.ownerId}`);
      if (!("settle" in taken)) throw new BrokerError("installation_lookups_limited", { detail: `owner ${ids.ownerId}`, retryAfter: taken.retryAfterSeconds });
      slot = taken;
    }
    let found: Installation | undefined;
    try {
      found = await deps.appJwt.withJwt(app, (appJwt) =>
        findInstallation({ client: target.client, appJwt, retry: deps.retry, installationId: platform.installationId, owner: scope.owner, repo: scope.repo, now: deps.now, deadlineAt: target.deadlineAt }),
      );
    } catch (error) {
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
    return found;
  });
  return { installation, cached: false, cacheKey };
}
