import { RequestError } from "@octokit/request-error";
import { BrokerError } from "../../shared/broker-error.js";
import type { Permissions } from "../../shared/token-permissions.js";
import type { PlatformClient } from "../github/platform-client.js";
import { DEFAULT_RETRY, statusOf, withRetry, type RetryPolicy } from "../github/platform-request.js";
import type { StreamListener } from "../github/streamed-json.js";
import { transientRetryAfter } from "../github/transient-failure.js";

export interface MintInput {
  client: PlatformClient;
  appJwt: string;
  installationId: number;
  /**
   * Repository *name* (not owner/name): the platform's `repositories` takes names. Absent (and no
   * `repositoryIds`): the token covers every repository of the installation (only for read-only crawls).
   */
  repositoryName?: string;
  /**
   * Repository ids (`repository_ids`): what /token mints by, so a name that now means another
   * repository (re-created, renamed owner) is refused by the platform with a 422.
   */
  repositoryIds?: number[];
  permissions: Permissions;
  retry?: RetryPolicy;
  /** Milliseconds since the epoch (a rate limit's reset is turned into a wait). Default Date.now. */
  now?: () => number;
  /** Epoch ms by which the answer must be in, retries included (withRetry's deadline); undefined: none. */
  deadlineAt?: number;
  /**
   * The answer may list thousands of repositories (a token over a whole installation on selected
   * repositories): read it as it arrives, each repository cut down to what is read here (PlatformCall.streamArray). /token's one-repository answer is not.
   */
  manyRepositories?: boolean;
  /**
   * With `manyRepositories`: told the token and each repository while the answer is still
   * arriving (once per attempt: a retried mint tells another token). Unconfirmed until the mint
   * returns: the answer may yet fail, and only what it returns counts.
   */
  early?: { token(token: string): void; repository(repository: MintedRepository): void };
}

/** One entry of the mint answer's `repositories[]`, as far as the broker checks it. */
export interface MintedRepository {
  id: number | null;
  fullName: string | null;
  ownerId: number | null;
  /** `name` and `owner.login`: what the /releases crawl queries by. */
  name: string | null;
  ownerLogin: string | null;
}

export interface MintedToken {
  token: string;
  /** Exactly as the platform wrote it. */
  expires_at: string;
  permissions: Record<string, string>;
  /** The answer's `repositories[]`; null when it has none (a token over the whole installation). */
  repositories: MintedRepository[] | null;
}

/**
 * `POST /app/installations/{id}/access_tokens`, scoped to one repository when one is named. Always a fresh token:
 * callers revoke their own tokens at job end, so sharing one between callers is never safe.
 * Retried on 5xx and rate limits only (a mint is idempotent: at worst an unused token expires).
 * 404 → app_not_installed (the installation is gone); 422 to a mint by id → app_not_installed
 * (the platform: "at least one repository … does not exist or is not accessible to the parent
 * installation": deleted, re-created, transferred); any other failure → installation_token_failed,
 * with `retryAfter` only when the failure is transient (5xx, network, rate limit).
 */
export async function mintInstallationToken(input: MintInput): Promise<MintedToken> {
  let data: unknown;
  try {
    const response = await withRetry(
      input.retry ?? DEFAULT_RETRY,
      "mint",
      (attempt) =>
        input.client({
          method: "POST",
          path: `/app/installations/${input.installationId}/access_tokens`,
          bearer: input.appJwt,
          body: {
            ...(input.repositoryIds === undefined ? {} : { repository_ids: [...input.repositoryIds] }),
            ...(input.repositoryName === undefined ? {} : { repositories: [input.repositoryName] }),
            permissions: input.permissions,
          },
          deadlineAt: attempt.deadlineAt,
          ...(input.manyRepositories ? { streamArray: { key: "repositories", keep: REPOSITORY_FIELDS, listener: earlyListener(input.early) } } : {}),
        }),
      { deadlineAt: input.deadlineAt, now: input.now, selfBounded: true },
    );
    data = response.data;
  } catch (error) {
    const status = statusOf(error);
    if (error instanceof RequestError && status === 404) throw new BrokerError("app_not_installed", { detail: "installation gone at mint" });
    if (error instanceof RequestError && status === 422 && input.repositoryIds !== undefined) {
      throw new BrokerError("app_not_installed", { detail: "repository id not accessible to the installation" });
    }
    throw new BrokerError("installation_token_failed", { detail: `status ${status ?? "network"}`, cause: error, retryAfter: transientRetryAfter(error, (input.now ?? Date.now)()) });
  }
  const { token, expires_at, permissions, repositories } = (data ?? {}) as { token?: unknown; expires_at?: unknown; permissions?: unknown; repositories?: unknown };
  if (typeof token !== "string" || token === "" || typeof expires_at !== "string" || expires_at === "") {
    throw new BrokerError("installation_token_failed", { detail: "mint answer without token or expires_at" });
  }
  const granted = permissions && typeof permissions === "object" ? { ...(permissions as Record<string, string>) } : { ...input.permissions };
  return { token, expires_at, permissions: granted, repositories: Array.isArray(repositories) ? repositories.map(readRepository) : null };
}

function earlyListener(early: MintInput["early"]): StreamListener | undefined {
  if (!early) return undefined;
  return {
    opened: ({ token }) => {
      if (typeof token === "string" && token !== "") early.token(token);
    },
    element: (entry) => early.repository(readRepository(entry)),
  };
}

/** The members of a repository object that readRepository reads (and the crawl's listing). */
export const REPOSITORY_FIELDS = { id: true, name: true, full_name: true, owner: { id: true, login: true } } as const;

function readRepository(entry: unknown): MintedRepository {
  const { id, name, full_name, owner } = (entry && typeof entry === "object" ? entry : {}) as { id?: unknown; name?: unknown; full_name?: unknown; owner?: unknown };
  const { id: ownerId, login } = (owner && typeof owner === "object" ? owner : {}) as { id?: unknown; login?: unknown };
  return {
    id: Number.isSafeInteger(id) ? (id as number) : null,
    fullName: typeof full_name === "string" ? full_name : null,
    ownerId: Number.isSafeInteger(ownerId) ? (ownerId as number) : null,
    name: typeof name === "string" ? name : null,
    ownerLogin: typeof login === "string" ? login : null,
  };
}
