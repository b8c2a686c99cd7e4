import { RequestError } from "@octokit/request-error";
import { BrokerError } from "../../shared/broker-error.js";
import type { Permissions } from "../../shared/token-permissions.js";
import type { PlatformClient } from "./platform-client.js";
import { DEFAULT_RETRY, statusOf, withRetry, type RetryPolicy } from "./platform-request.js";

export interface MintInput {
  client: PlatformClient;
  appJwt: string;
  installationId: number;
  /**
   * Repository *name* (not owner/name): the platform's `repositories` takes names. Absent: the
   * token covers every repository of the installation (only for read-only crawls).
   */
  repositoryName?: string;
  permissions: Permissions;
  retry?: RetryPolicy;
}

export interface MintedToken {
  token: string;
  /** Exactly as the platform wrote it. */
  expires_at: string;
  permissions: Record<string, string>;
}

/**
 * `POST /app/installations/{id}/access_tokens`, scoped to one repository when one is named. Always a fresh token:
 * callers revoke their own tokens at job end, so sharing one between callers is never safe.
 * Retried on 5xx and rate limits only (a mint is idempotent: at worst an unused token expires).
 * 404 → app_not_installed (the installation is gone); any other failure → installation_token_failed.
 */
export async function mintInstallationToken(input: MintInput): Promise<MintedToken> {
  let data: unknown;
  try {
    const response = await withRetry(input.retry ?? DEFAULT_RETRY, "mint", () =>
      input.client({
        method: "POST",
        path: `/app/installations/${input.installationId}/access_tokens`,
        bearer: input.appJwt,
        body: {
          ...(input.repositoryName === undefined ? {} : { repositories: [input.repositoryName] }),
          permissions: input.permissions,
        },
      }),
    );
    data = response.data;
  } catch (error) {
    const status = statusOf(error);
    if (error instanceof RequestError && status === 404) throw new BrokerError("app_not_installed", { detail: "installation gone at mint" });
    throw new BrokerError("installation_token_failed", { detail: `status ${status ?? "network"}`, cause: error });
  }
  const { token, expires_at, permissions } = (data ?? {}) as { token?: unknown; expires_at?: unknown; permissions?: unknown };
  if (typeof token !== "string" || token === "" || typeof expires_at !== "string" || expires_at === "") {
    throw new BrokerError("installation_token_failed", { detail: "mint answer without token or expires_at" });
  }
  const granted = permissions && typeof permissions === "object" ? { ...(permissions as Record<string, string>) } : { ...input.permissions };
  return { token, expires_at, permissions: granted };
}
