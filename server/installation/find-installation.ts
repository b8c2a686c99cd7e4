import { RequestError } from "@octokit/request-error";
import { BrokerError } from "../../shared/broker-error.js";
import type { PlatformClient } from "../github/platform-client.js";
import { DEFAULT_RETRY, statusOf, withRetry, type RetryPolicy } from "../github/platform-request.js";
import { transientRetryAfter } from "../github/transient-failure.js";

export interface Installation {
  id: number;
  /** What the installation was granted, e.g. { contents: "write", metadata: "read" }. */
  permissions: Record<string, string>;
  /** The account it is installed on; null when the platform names none (an enterprise installation). */
  account: { login: string; id: number } | null;
  /** The installation object's `app_slug` (GitHub sends it on every lookup); undefined when absent. */
  appSlug?: string;
}

interface InstallationLookup {
  client: PlatformClient;
  appJwt: string;
  retry?: RetryPolicy;
  /** ENT_APP_INSTALLATION_ID: skip the per-repository lookup, read that installation instead. */
  installationId?: number | null;
  owner: string;
  repo: string;
  /** Milliseconds since the epoch (a rate limit's reset is turned into a wait). Default Date.now. */
  now?: () => number;
  /** Epoch ms by which the answer must be in, retries included (withRetry's deadline); undefined: none. */
  deadlineAt?: number;
}

/**
 * `GET /repos/{owner}/{repo}/installation` (or `GET /app/installations/{id}` when the id is
 * configured). 404 → app_not_installed; anything else unusable → github_installation_lookup_failed,
 * with `retryAfter` when the failure is transient (5xx, network, rate limit) and none otherwise.
 */
export async function findInstallation(lookup: InstallationLookup): Promise<Installation> {
  let data: unknown;
  try {
    const response = await withRetry(
      lookup.retry ?? DEFAULT_RETRY,
      "installation lookup",
      (attempt) =>
        lookup.client({
          method: "GET",
          path: lookup.installationId
            ? `/app/installations/${lookup.installationId}`
            : `/repos/${encodeURIComponent(lookup.owner)}/${encodeURIComponent(lookup.repo)}/installation`,
          bearer: lookup.appJwt,
          deadlineAt: attempt.deadlineAt,
        }),
      { deadlineAt: lookup.deadlineAt, now: lookup.now, selfBounded: true },
    );
    data = response.data;
  } catch (error) {
    if (error instanceof RequestError && statusOf(error) === 404) throw new BrokerError("app_not_installed");
    throw new BrokerError("github_installation_lookup_failed", {
      detail: `status ${statusOf(error) ?? "network"}`,
      cause: error,
      retryAfter: transientRetryAfter(error, (lookup.now ?? Date.now)()),
    });
  }
  const { id, permissions, account, app_slug } = (data ?? {}) as { id?: unknown; permissions?: unknown; account?: unknown; app_slug?: unknown };
  if (!Number.isSafeInteger(id) || (id as number) <= 0 || !permissions || typeof permissions !== "object" || Array.isArray(permissions)) {
    throw new BrokerError("github_installation_lookup_failed", { detail: "installation object without id or permissions" });
  }
  return {
    id: id as number,
    permissions: { ...(permissions as Record<string, string>) },
    account: readAccount(account),
    // Passed on to the action (its app-slug output): only a slug's own characters, so nothing else rides along.
    ...(typeof app_slug === "string" && /^[a-z0-9][a-z0-9-]{0,99}$/i.test(app_slug) ? { appSlug: app_slug } : {}),
  };
}

function readAccount(account: unknown): Installation["account"] {
  if (!account || typeof account !== "object") return null;
  const { login, id } = account as { login?: unknown; id?: unknown };
  return typeof login === "string" && Number.isSafeInteger(id) ? { login, id: id as number } : null;
}
