// POLICY_CHECK_RUNS (DESIGN.md "Seeing it"): a pull request that changes a policy file gets a check
// run named `tokensmith policy` with the validation result of the file as the pull request has it,
// when the installation grants `checks: write` (else one log line). Runs after the delivery was
// answered (202); its own token (contents and pull requests read, checks write) is revoked after.
// https://docs.github.com/rest/checks/runs#create-a-check-run
import type { BrokerContext } from "../context.js";
import { findInstallation } from "../github/find-installation.js";
import { intersectPermissions } from "../github/intersect-permissions.js";
import { mintInstallationToken } from "../github/mint-installation-token.js";
import { revokeInstallationToken } from "../github/revoke-installation-token.js";
import { isObject, own } from "../http/fields.js";
import { requireApp } from "../token/trust.js";
import { fetchPolicyFile } from "./fetch-policy-file.js";
import { POLICY_FILES, type PolicyKind } from "./policy-types.js";

export const CHECK_RUN_NAME = "tokensmith policy";
const CHECKED_ACTIONS = new Set(["opened", "synchronize", "reopened"]);

export interface PolicyPullRequest {
  owner: string;
  repo: string;
  repositoryId: number;
  number: number;
  headSha: string;
  installationId: number;
}

/** The fields of a `pull_request` delivery a check needs; null for actions that change no code. */
export function readPolicyPullRequest(payload: Record<string, unknown>): PolicyPullRequest | null {
  const action = own(payload, "action");
  if (typeof action !== "string" || !CHECKED_ACTIONS.has(action)) return null;
  const repository = own(payload, "repository");
  const pull = own(payload, "pull_request");
  const installation = own(payload, "installation");
  if (!isObject(repository) || !isObject(pull) || !isObject(installation)) return null;
  const fullName = own(repository, "full_name");
  const head = own(pull, "head");
  const headSha = isObject(head) ? own(head, "sha") : undefined;
  const number = own(pull, "number");
  const repositoryId = own(repository, "id");
  const installationId = own(installation, "id");
  if (typeof fullName !== "string" || !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(fullName)) return null;
  if (typeof headSha !== "string" || !/^[0-9a-f]{40}$/.test(headSha)) return null;
  if (!Number.isSafeInteger(number) || !Number.isSafeInteger(repositoryId) || !Number.isSafeInteger(installationId)) return null;
  const [owner, repo] = fullName.split("/") as [string, string];
  return { owner, repo, repositoryId: repositoryId as number, number: number as number, headSha, installationId: installationId as number };
}

/** The check: never throws (a failure is one log line: the delivery was answered already). */
export async function runPolicyCheck(ctx: BrokerContext, pr: PolicyPullRequest): Promise<void> {
  const where = { repository: `${pr.owner}/${pr.repo}`, pull_request: pr.number };
  try {
    const settings = ctx.settings();
    const platform = settings.main;
    const app = requireApp(platform);
    const client = ctx.clientFor(platform);
    const appJwt = await ctx.appJwt.jwtFor(app);
    const installation = await findInstallation({ client, appJwt, retry: ctx.retry, installationId: pr.installationId, owner: pr.owner, repo: pr.repo, now: ctx.now });
    if (installation.permissions.checks !== "write") {
      ctx.log.info({ ...where, installation_id: installation.id }, "policy check run skipped: the installation does not grant checks: write");
      return;
    }
    const minted = await mintInstallationToken({
      client, appJwt, installationId: installation.id, repositoryIds: [pr.repositoryId], retry: ctx.retry, now: ctx.now,
      permissions: intersectPermissions({ contents: "read", pull_requests: "read", checks: "write" }, installation.permissions),
    });
    try {
      const files = await client({ method: "GET", path: `/repos/${encodeURIComponent(pr.owner)}/${encodeURIComponent(pr.repo)}/pulls/${pr.number}/files?per_page=100`, bearer: minted.token });
      const changed = (Array.isArray(files.data) ? files.data : []) as Array<{ filename?: unknown; status?: unknown }>;
      const policyPaths: Array<[PolicyKind, string]> = [["repository", POLICY_FILES.repository], ...(pr.repo === ".github" ? [["owner", POLICY_FILES.owner] as [PolicyKind, string]] : [])];
      const lines: string[] = [];
      let failed = false;
      for (const [kind, path] of policyPaths) {
        const entry = changed.find((file) => file.filename === path);
        if (!entry) continue;
        if (entry.status === "removed") {
          lines.push(`${path}: removed (no ${kind} policy once merged)`);
          continue;
        }
        const read = await fetchPolicyFile({ client, token: minted.token, owner: pr.owner, repo: pr.repo, path, ref: pr.headSha });
        if (read.kind !== "file") {
          failed = true;
          lines.push(`${path}: ${read.kind === "unreadable" ? read.problem : "not readable at the pull request's head"}`);
          continue;
        }
        const compiled = createCompiled(ctx, kind, read.text, read.sha, path);
        if (!compiled.ok) {
          failed = true;
          lines.push(compiled.detail);
        } else {
          lines.push(`${path}: valid ${kind} policy, rules: ${compiled.policy.rules.map((r) => r.name).join(", ")}`, ...compiled.policy.warnings.map((w) => `warning: ${w}`));
        }
      }
      if (lines.length === 0) {
        ctx.log.debug(where, "policy check run skipped: no policy file changed");
        return;
      }
      await client({
        method: "POST",
        path: `/repos/${encodeURIComponent(pr.owner)}/${encodeURIComponent(pr.repo)}/check-runs`,
        bearer: minted.token,
        body: {
          name: CHECK_RUN_NAME, head_sha: pr.headSha, status: "completed", conclusion: failed ? "failure" : "success",
          output: { title: failed ? "The policy does not validate" : "The policy validates", summary: lines.join("\n").slice(0, 60_000) },
        },
      });
      ctx.log.info({ ...where, conclusion: failed ? "failure" : "success" }, "policy check run created");
    } finally {
      await revokeInstallationToken({ client, token: minted.token, log: ctx.log, why: "policy check run done" });
    }
  } catch (error) {
    ctx.log.warn({ ...where, err: error instanceof Error ? error.name : "unknown", status: (error as { status?: unknown })?.status }, "policy check run failed");
  }
}

function createCompiled(ctx: BrokerContext, kind: PolicyKind, text: string, sha: string, file: string) {
  return ctx.policies.compiled(sha, kind, text, file);
}
