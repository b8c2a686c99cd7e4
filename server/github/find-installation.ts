import { RequestError } from "@octokit/request-error";
import { BrokerError } from "../../shared/broker-error.js";
import type { PlatformClient } from "./platform-client.js";
import { DEFAULT_RETRY, statusOf, withRetry, type RetryPolicy } from "./platform-request.js";

export interface Installation {
  id: number;
  /** What the installation was granted, e.g. { contents: "write", metadata: "read" }. */
  permissions: Record<string, string>;
}

export interface InstallationLookup {
  client: PlatformClient;
  appJwt: string;
  retry?: RetryPolicy;
  /** ENT_APP_INSTALLATION_ID: skip the per-repository lookup, read that installation instead. */
  installationId?: number | null;
  owner: string;
  repo: string;
}

/**
 * `GET /repos/{owner}/{repo}/installation` (or `GET /app/installations/{id}` when the id is
 * configured). 404 → app_not_installed; anything else unusable → github_installation_lookup_failed.
 */
export async function findInstallation(lookup: InstallationLookup): Promise<Installation> {
  let data: unknown;
  try {
    const response = await withRetry(lookup.retry ?? DEFAULT_RETRY, "installation lookup", () =>
      lookup.client({
        method: "GET",
        path: lookup.installationId
          ? `/app/installations/${lookup.installationId}`
          : `/repos/${encodeURIComponent(lookup.owner)}/${encodeURIComponent(lookup.repo)}/installation`,
        bearer: lookup.appJwt,
      }),
    );
    data = response.data;
  } catch (error) {
    if (error instanceof RequestError && statusOf(error) === 404) throw new BrokerError("app_not_installed");
    throw new BrokerError("github_installation_lookup_failed", { detail: `status ${statusOf(error) ?? "network"}`, cause: error });
  }
  const { id, permissions } = (data ?? {}) as { id?: unknown; permissions?: unknown };
  if (!Number.isSafeInteger(id) || (id as number) <= 0 || !permissions || typeof permissions !== "object" || Array.isArray(permissions)) {
    throw new BrokerError("github_installation_lookup_failed", { detail: "installation object without id or permissions" });
  }
  return { id: id as number, permissions: { ...(permissions as Record<string, string>) } };
}
