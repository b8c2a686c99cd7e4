// A verified `push` to a repository's default branch that touches a policy file drops the cached
// read at once (docs/policies.md#cost-and-cache): the next /token reads the new policy. Internal only: the
// webhook's answer stays the API's, and nothing here can fail the delivery.
// https://docs.github.com/webhooks/webhook-events-and-payloads#push
import type { StoreRegistry } from "../kv/key-value-store.js";
import type { Logger } from "../log.js";
import type { Settings } from "../settings.js";
import { isObject, own } from "../http/fields.js";
import { policyFileKey } from "./policy-files.js";
import type { PolicyService } from "./policy-service.js";
import { POLICY_FILES } from "./policy-types.js";

/** What the drops use of the broker's context (passed in: docs/design.md#layers). */
export interface PolicyDropDeps {
  settings: () => Settings;
  stores: Pick<StoreRegistry, "get">;
  policies: PolicyService;
  log: Logger;
}

/** GitHub lists at most 20 commits in a push payload: a longer push may touch a file it does not list. */
const LISTED_COMMITS = 20;

interface PolicyPush {
  repositoryId: number;
  ownerId: number;
  /** The repository is the owner's `.github`, whose tokensmith-org.yml is the owner policy. */
  ownerPolicyRepository: boolean;
  repositoryPolicy: boolean;
  ownerPolicy: boolean;
}

/** Which cached policies a push payload invalidates; null when none. Pure. */
export function policyFilesPushed(payload: Record<string, unknown>): PolicyPush | null {
  const repository = own(payload, "repository");
  if (!isObject(repository)) return null;
  const ref = own(payload, "ref");
  const defaultBranch = own(repository, "default_branch");
  if (typeof ref !== "string" || typeof defaultBranch !== "string" || ref !== `refs/heads/${defaultBranch}`) return null;
  const repositoryId = own(repository, "id");
  const owner = own(repository, "owner");
  const ownerId = isObject(owner) ? own(owner, "id") : undefined;
  if (!Number.isSafeInteger(repositoryId) || !Number.isSafeInteger(ownerId)) return null;
  const commits = own(payload, "commits");
  const list = Array.isArray(commits) ? commits : [];
  const touched = new Set<string>();
  for (const commit of [...list, own(payload, "head_commit")]) {
    if (!isObject(commit)) continue;
    for (const field of ["added", "modified", "removed"]) {
      const paths = own(commit, field);
      if (Array.isArray(paths)) for (const path of paths) if (typeof path === "string") touched.add(path);
    }
  }
  const unsure = !Array.isArray(commits) || list.length >= LISTED_COMMITS || own(payload, "forced") === true;
  const repositoryPolicy = unsure || touched.has(POLICY_FILES.repository);
  const ownerPolicyRepository = own(repository, "name") === ".github";
  const ownerPolicy = ownerPolicyRepository && (unsure || touched.has(POLICY_FILES.owner));
  return repositoryPolicy || ownerPolicy ? { repositoryId: repositoryId as number, ownerId: ownerId as number, ownerPolicyRepository, repositoryPolicy, ownerPolicy } : null;
}

/** Drops what a verified push invalidates (main platform: the only one that sends webhooks here). */
export async function dropPoliciesOnPush(ctx: PolicyDropDeps, payload: unknown): Promise<void> {
  try {
    if (!isObject(payload)) return;
    const pushed = policyFilesPushed(payload);
    if (!pushed) return;
    const settings = ctx.settings();
    const store = ctx.stores.get(settings.jwksCacheUrl, "tokensmith-policy");
    const ttlMs = settings.policyCacheSeconds * 1000;
    const apiBase = settings.main.apiBase;
    if (pushed.repositoryPolicy) await ctx.policies.files.drop(policyFileKey(apiBase, { repositoryId: pushed.repositoryId }), ttlMs, store);
    if (pushed.ownerPolicy) await ctx.policies.files.drop(policyFileKey(apiBase, { ownerId: pushed.ownerId }), ttlMs, store);
    ctx.log.info({ repository_id: pushed.repositoryId, repository_policy: pushed.repositoryPolicy, owner_policy: pushed.ownerPolicy }, "policy cache dropped by a push");
  } catch (error) {
    ctx.log.warn({ err: error instanceof Error ? error.name : "unknown" }, "policy cache drop failed; the cached read expires on its own");
  }
}

/**
 * An `installation` or `installation_repositories` delivery (verified): the installation's reader
 * tokens (and the names of other repositories it looked up) are forgotten, so the next policy read sees its repositories and permissions as they are now.
 * https://docs.github.com/webhooks/webhook-events-and-payloads#installation_repositories
 */
export function dropReadersOnInstallationChange(ctx: Pick<PolicyDropDeps, "policies" | "log">, event: string, payload: unknown): void {
  if (event !== "installation" && event !== "installation_repositories") return;
  const installation = isObject(payload) ? own(payload, "installation") : undefined;
  const id = isObject(installation) ? own(installation, "id") : undefined;
  if (typeof id !== "number" || !Number.isSafeInteger(id)) return;
  ctx.policies.readers.dropInstallation(id);
  // And which repositories the App sees by name (a target of `repositories` added or removed).
  ctx.policies.targets.dropInstallation(id);
  ctx.log.info({ event, installation_id: id }, "policy reader token dropped by an installation change");
}
