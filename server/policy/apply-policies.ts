// The /token step "trust policies" (DESIGN.md "Who gets which token"), between the installation
// lookup and the mint: read the repository's and the owner's policy files (cached, conditional,
// with the broker's own reader token), decide, and hand back the ceilings the grant is cut by.
// Fail closed: a file that does not validate → 403 policy_invalid; the platform not answering →
// 503 policy_unavailable with Retry-After (never "no policy"); no rule → 403 policy_denied.
import { BrokerError } from "../../shared/broker-error.js";
import type { AppCredentials } from "../app-credentials.js";
import type { BrokerContext } from "../context.js";
import type { Installation } from "../github/find-installation.js";
import { mintInstallationToken } from "../github/mint-installation-token.js";
import { transientRetryAfter } from "../github/transient-failure.js";
import type { PlatformSettings, Settings } from "../settings.js";
import { decidePolicy, type PolicyDecision } from "./decide-policy.js";
import { fetchPolicyFile, PolicyReadFailure } from "./fetch-policy-file.js";
import { policyFileKey, type FileState } from "./policy-files.js";
import { POLICY_FILES, type CompiledPolicy, type PolicyKind } from "./policy-types.js";

/** Retry-After of a policy_unavailable whose failure named no wait of its own. */
export const POLICY_RETRY_AFTER_SECONDS = 5;

export interface PolicyStep {
  settings: Settings;
  platform: PlatformSettings;
  app: AppCredentials;
  installation: Installation;
  claims: Readonly<Record<string, unknown>>;
  owner: string;
  repo: string;
  ids: { repositoryId: number; ownerId: number };
  rule?: string;
  deadlineAt?: number;
}

/** What applied, for the grant and the audit line. */
export interface PolicyOutcome {
  decision: Extract<PolicyDecision, { ok: true }>;
  repositorySha?: string;
  ownerSha?: string;
}

export async function applyPolicies(ctx: BrokerContext, step: PolicyStep): Promise<PolicyOutcome | null> {
  const mode = step.settings.tokenPolicy;
  if (mode === "off") return null;
  // Without contents access the App cannot read any policy: as if none existed (optional), or
  // nothing is given (required). `doctor` says so; the log says it per denial.
  const canRead = step.installation.permissions.contents !== undefined;
  const [repository, owner] = canRead
    ? await Promise.all([load(ctx, step, "repository"), load(ctx, step, "owner")])
    : [null, null];
  const decision = decidePolicy({ mode, repository: repository?.policy ?? null, owner: owner?.policy ?? null, claims: step.claims, rule: step.rule, repositoryName: step.repo });
  const named = !canRead && mode === "required"
    ? { ok: false as const, detail: "the App's installation has no contents permission, so no policy can be read, and the broker requires one (TOKEN_POLICY=required)" }
    : step.rule !== undefined && decision.ok && decision.rule === undefined && decision.ownerRule === undefined
      ? { ok: false as const, detail: `no rule named ${step.rule} (no policy applies to this repository)` }
      : decision;
  if (!named.ok) {
    ctx.log.info({ audit: "token_denied", code: "policy_denied", repository: `${step.owner}/${step.repo}`, repository_id: step.ids.repositoryId, detail: named.detail, policy_sha: repository?.sha, owner_policy_sha: owner?.sha, contents_readable: canRead }, "policy denied the token");
    throw new BrokerError("policy_denied", { detail: named.detail, answerDetail: named.detail });
  }
  return { decision: named, ...(repository ? { repositorySha: repository.sha } : {}), ...(owner ? { ownerSha: owner.sha } : {}) };
}

/** One policy file, compiled; null when there is none. */
async function load(ctx: BrokerContext, step: PolicyStep, kind: PolicyKind): Promise<{ policy: CompiledPolicy; sha: string } | null> {
  const path = POLICY_FILES[kind];
  const where = kind === "repository" ? { owner: step.owner, repo: step.repo } : { owner: step.owner, repo: ".github" };
  const key = policyFileKey(step.platform.apiBase, kind === "repository" ? { repositoryId: step.ids.repositoryId } : { ownerId: step.ids.ownerId });
  const store = ctx.stores.get(step.settings.jwksCacheUrl, "tokensmith-policy");
  const client = ctx.clientFor(step.platform);
  const readerKey = ctx.policies.readers.key(step.platform.apiBase, step.app.appId, step.installation.id);
  let state: FileState;
  try {
    state = await ctx.policies.files.read(key, step.settings.policyCacheSeconds * 1000, store, async (etag) => {
      for (let attempt = 1; ; attempt += 1) {
        const reader = await ctx.policies.readers.get(readerKey, () => mintReader(ctx, step));
        try {
          return await fetchPolicyFile({ client, token: reader.token, ...where, path, etag, deadlineAt: step.deadlineAt });
        } catch (error) {
          // A reader token the platform no longer takes (revoked, the installation's permissions
          // changed) is dropped and this read is made once more with a fresh one: the jobs waiting
          // on the read get their answer, not 503 policy_unavailable for the broker's own token.
          // (Both files' reads share the one new mint.) A second 401 fails the read.
          if (!(error instanceof PolicyReadFailure && error.status === 401)) throw error;
          ctx.policies.readers.drop(readerKey, reader.token);
          if (attempt >= 2) throw error;
        }
      }
    });
  } catch (error) {
    if (error instanceof BrokerError && error.code === "policy_unavailable") throw error;
    const status = error instanceof PolicyReadFailure ? error.status : undefined;
    throw new BrokerError("policy_unavailable", {
      detail: `${kind} policy read: status ${status ?? "network"}`,
      cause: error,
      retryAfter: transientRetryAfter(error instanceof PolicyReadFailure ? error.cause : error, ctx.now()) ?? POLICY_RETRY_AFTER_SECONDS,
    });
  }
  if (state.absent) return null;
  const file = kind === "repository" ? path : `${step.owner}/.github/${path}`;
  if (state.problem !== undefined || state.text === undefined || state.sha === undefined) {
    throw invalid(`${file}: ${state.problem ?? "unreadable"}`);
  }
  const compiled = ctx.policies.compiled(state.sha, kind, state.text, file);
  if (!compiled.ok) throw invalid(compiled.detail);
  return { policy: compiled.policy, sha: state.sha };
}

function invalid(detail: string): BrokerError {
  return new BrokerError("policy_invalid", { detail, answerDetail: detail });
}

/** The broker's own token: contents read over the whole installation (its policy files and the owner's .github). */
async function mintReader(ctx: BrokerContext, step: PolicyStep) {
  try {
    const minted = await mintInstallationToken({
      client: ctx.clientFor(step.platform),
      appJwt: await ctx.appJwt.jwtFor(step.app),
      installationId: step.installation.id,
      permissions: { contents: "read" },
      retry: ctx.retry,
      now: ctx.now,
      deadlineAt: step.deadlineAt,
    });
    const expiresAtMs = Date.parse(minted.expires_at);
    return { token: minted.token, expiresAtMs: Number.isFinite(expiresAtMs) ? expiresAtMs : ctx.now() + 30 * 60_000 };
  } catch (error) {
    throw new BrokerError("policy_unavailable", {
      detail: "reader token mint failed",
      cause: error,
      retryAfter: (error instanceof BrokerError ? error.retryAfter : undefined) ?? POLICY_RETRY_AFTER_SECONDS,
    });
  }
}
