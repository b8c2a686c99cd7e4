// POLICY_CHECK_RUNS (docs/policies.md#tools): a pull request that changes a policy file gets a check
// run named `tokensmith policy` with the validation result of the file as the pull request has it,
// when the installation grants `checks: write` (else one log line). Runs from the check-run queue
// after the delivery was answered (202). Which files changed is read with the installation's kept
// reader token (changed-policy-files.ts): a pull request that changes none costs no mint. Only one
// that does costs the installation lookup (cached) and a token with `checks: write` alone, revoked
// after; both App calls are spent within the check runs' share of the App's budget.
// https://docs.github.com/rest/checks/runs#create-a-check-run
import type { InstallationDeps } from "../installation/repository-installation.js";
import type { Settings } from "../settings.js";
import type { PolicyService } from "./policy-service.js";
import { installationById } from "../installation/installation-by-id.js";
import { intersectPermissions } from "../installation/intersect-permissions.js";
import { mintInstallationToken } from "../installation/mint-installation-token.js";
import { revokeInstallationToken } from "../installation/revoke-installation-token.js";
import { isObject, own } from "../http/fields.js";
import { requireApp } from "../token/trust.js";
import { changedPolicyFiles, type AppCall, type ChangedPolicyFile } from "./changed-policy-files.js";
import type { PolicyKind } from "./policy-types.js";

/** What a policy check uses of the broker's context (passed in: docs/design.md#layers). */
export type PolicyCheckDeps = InstallationDeps & { settings: () => Settings; policies: PolicyService };

const CHECK_RUN_NAME = "tokensmith policy";
const CHECKED_ACTIONS = new Set(["opened", "synchronize", "reopened"]);

export interface PolicyPullRequest {
  owner: string;
  repo: string;
  repositoryId: number;
  number: number;
  headSha: string;
  /** `pull_request.base.sha`, or its `base.ref` when the delivery has no sha. */
  base: string;
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
  const baseSide = own(pull, "base");
  const baseSha = isObject(baseSide) ? own(baseSide, "sha") : undefined;
  const baseRef = isObject(baseSide) ? own(baseSide, "ref") : undefined;
  const base = typeof baseSha === "string" && /^[0-9a-f]{40}$/.test(baseSha) ? baseSha : typeof baseRef === "string" && /^[A-Za-z0-9_./-]{1,255}$/.test(baseRef) ? baseRef : undefined;
  const number = own(pull, "number");
  const repositoryId = own(repository, "id");
  const installationId = own(installation, "id");
  if (typeof fullName !== "string" || !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(fullName)) return null;
  if (typeof headSha !== "string" || !/^[0-9a-f]{40}$/.test(headSha) || base === undefined) return null;
  if (!Number.isSafeInteger(number) || !Number.isSafeInteger(repositoryId) || !Number.isSafeInteger(installationId)) return null;
  const [owner, repo] = fullName.split("/") as [string, string];
  return { owner, repo, repositoryId: repositoryId as number, number: number as number, headSha, base, installationId: installationId as number };
}

/** How a check ended: `failed` before it could act (its claims are handed back, so a redelivery tries again). */
export type CheckEnd = "done" | "failed";

/** The check: never throws (a failure is one log line: the delivery was answered already). */
export async function runPolicyCheck(ctx: PolicyCheckDeps, pr: PolicyPullRequest, deps: { appCall: AppCall }): Promise<CheckEnd> {
  const where = { repository: `${pr.owner}/${pr.repo}`, pull_request: pr.number, head_sha: pr.headSha };
  try {
    const platform = ctx.settings().main;
    const app = requireApp(platform);
    const changed = await changedPolicyFiles(ctx, { platform, app, appCall: deps.appCall }, pr);
    if (changed.length === 0) {
      ctx.log.info(where, "policy check run skipped: no policy file changed");
      return "done";
    }
    const installation = await installationById(ctx, platform, app, pr, (call) => deps.appCall(1, call));
    if (installation.permissions.checks !== "write") {
      ctx.log.info({ ...where, installation_id: installation.id }, "policy check run skipped: the installation does not grant checks: write");
      return "done";
    }
    const client = ctx.clientFor(platform);
    const minted = await deps.appCall(5, () =>
      ctx.appJwt.withJwt(app, (appJwt) =>
        mintInstallationToken({
          client, appJwt, installationId: installation.id, repositoryIds: [pr.repositoryId], retry: ctx.retry, now: ctx.now,
          permissions: intersectPermissions({ checks: "write" }, installation.permissions),
        }),
      ),
    );
    try {
      const { lines, failed } = validate(ctx, changed);
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
    return "done";
  } catch (error) {
    ctx.log.warn({ ...where, err: error instanceof Error ? error.name : "unknown", status: (error as { status?: unknown })?.status }, "policy check run failed");
    return "failed";
  }
}

/** The check run's lines: each changed file's validation as the head has it. */
function validate(ctx: PolicyCheckDeps, changed: ChangedPolicyFile[]): { lines: string[]; failed: boolean } {
  const lines: string[] = [];
  let failed = false;
  for (const { kind, path, head } of changed) {
    if (head.kind === "absent") {
      lines.push(`${path}: removed (no ${kind} policy once merged)`);
      continue;
    }
    if (head.kind !== "file") {
      failed = true;
      lines.push(`${path}: ${head.kind === "unreadable" ? head.problem : "not readable at the pull request's head"}`);
      continue;
    }
    const compiled = createCompiled(ctx, kind, head.text, head.sha, path);
    if (!compiled.ok) {
      failed = true;
      lines.push(compiled.detail);
    } else {
      lines.push(`${path}: valid ${kind} policy, rules: ${compiled.policy.rules.map((r) => r.name).join(", ")}`, ...compiled.policy.warnings.map((w) => `warning: ${w}`));
    }
  }
  return { lines, failed };
}

function createCompiled(ctx: PolicyCheckDeps, kind: PolicyKind, text: string, sha: string, file: string) {
  return ctx.policies.compiled(sha, kind, text, file);
}
