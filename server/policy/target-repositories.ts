// Another repository named in a /token request's `repositories`, known by id (docs/policies.md#other-repositories
// repositories"): its policy is cached by repository id like the caller's (a renamed or re-created
// repository never inherits another's consent), and the token is minted by ids, the mint's answer
// checked to name each id under the name that was asked for. The name → id lookup is
// `GET /repos/{owner}/{repo}` with the broker's reader token (contents read over the installation):
// a 404 means the App cannot see it (no such repository, or not in the installation), and the two
// are not told apart. Kept in memory for POLICY_CACHE_SECONDS; a rename between the lookup and the
// mint shows in the mint's answer (the token is revoked then, and the entry dropped).
// https://docs.github.com/rest/repos/repos#get-a-repository
import { RequestError } from "@octokit/request-error";
import { createLoadingCache } from "../cache/loading-cache.js";
import type { PlatformClient } from "../github/platform-client.js";
import { statusOf } from "../github/platform-request.js";
import { PolicyReadFailure } from "./fetch-policy-file.js";

/** A target as the platform names it. */
export interface TargetRepository {
  id: number;
  /** As the platform spells it (`full_name` without the owner). */
  name: string;
  ownerId: number;
}

export function createTargetRepositories(options: { now: () => number; maxEntries?: number }) {
  // The cache primitive (server/cache/loading-cache.ts): a lookup under way when an installation
  // change drops the installation's names is answered to its callers, never kept.
  const known = createLoadingCache<TargetRepository | null>({ max: options.maxEntries ?? 10_000, now: options.now });
  return {
    key: (apiBase: string, installationId: number, owner: string, name: string) => `${apiBase}\u0000${installationId}\u0000${owner.toLowerCase()}/${name.toLowerCase()}`,
    /** The target (null: the App cannot see it), looked up through `fetch` unless known for less than `ttlMs`. Concurrent misses share one lookup; a failure is not kept. */
    get(key: string, ttlMs: number, fetch: () => Promise<TargetRepository | null>): Promise<TargetRepository | null> {
      return known.get(key, fetch, () => ttlMs);
    },
    /** The mint's answer named the id under another name (renamed, re-created), or the installation changed. */
    drop(key: string): void {
      known.invalidate(key);
    },
    dropInstallation(installationId: number): void {
      const infix = `\u0000${installationId}\u0000`;
      known.invalidateWhere((key) => key.includes(infix));
    },
  };
}


/** `GET /repos/{owner}/{repo}`: the repository's id, name and owner id; null on 404. */
export async function fetchTargetRepository(input: { client: PlatformClient; token: string; owner: string; repo: string; deadlineAt?: number }): Promise<TargetRepository | null> {
  let answer;
  try {
    answer = await input.client({ method: "GET", path: `/repos/${encodeURIComponent(input.owner)}/${encodeURIComponent(input.repo)}`, bearer: input.token, deadlineAt: input.deadlineAt });
  } catch (error) {
    if (error instanceof RequestError && statusOf(error) === 404) return null;
    throw new PolicyReadFailure(error instanceof RequestError ? statusOf(error) : undefined, { cause: error });
  }
  const data = (answer.data ?? {}) as { id?: unknown; name?: unknown; owner?: { id?: unknown } | null };
  const id = data.id;
  const ownerId = data.owner?.id;
  if (!Number.isSafeInteger(id) || !Number.isSafeInteger(ownerId) || typeof data.name !== "string") {
    throw new PolicyReadFailure(answer.status, { cause: new Error("repository answer without id, name or owner id") });
  }
  return { id: id as number, name: data.name, ownerId: ownerId as number };
}
