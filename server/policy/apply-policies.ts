// The /token step "trust policies" (docs/policies.md), between the installation
// lookup and the mint: read the owner's policy file, then the repository's unless the owner's says
// `repository_policies: ignore` (cached, conditional, with the broker's own reader token), decide the
// caller, then the other repositories it names, and hand back the ceilings the grant is cut by.
// Fail closed: a file that does not validate → 403 policy_invalid; the platform not answering →
// 503 policy_unavailable with Retry-After (never "no policy"); no rule → 403 policy_denied.
import { sealSecretOf } from "../signing/app-key.js";
import { BrokerError } from "../../shared/broker-error.js";
import type { AppCredentials } from "../app-credentials.js";
import type { OwnerLookupLimiter } from "../github/owner-lookup-limiter.js";
import type { InstallationDeps } from "../installation/repository-installation.js";
import type { StoreRegistry } from "../kv/key-value-store.js";
import type { PolicyService } from "./policy-service.js";
import type { Installation } from "../installation/find-installation.js";
import { mintInstallationToken } from "../installation/mint-installation-token.js";
import { transientRetryAfter } from "../github/transient-failure.js";
import type { PlatformSettings, Settings } from "../settings.js";
import type { PermissionCeiling } from "../token/grant-permissions.js";
import { consentDenied, decideConsent } from "./decide-consent.js";
import { decidePolicy, type PolicyDecision } from "./decide-policy.js";
import { PolicyReadFailure, readPolicyFile } from "./fetch-policy-file.js";
import { READER_RECHECK_MS, readerCovers, readerFromMint, type ReaderToken } from "./reader-tokens.js";
import { fetchTargetRepository, type TargetRepository } from "./target-repositories.js";
import { policyFileKey, type FileState } from "./policy-files.js";
import { POLICY_FILES, type CompiledPolicy, type PolicyKind } from "./policy-types.js";

/** What the trust policies use of the broker's context (passed in: docs/design.md#layers). */
export type PolicyDeps = Pick<InstallationDeps, "appJwt" | "clientFor" | "log" | "now" | "retry"> & {
  policies: PolicyService;
  stores: Pick<StoreRegistry, "get">;
  targetLookups: OwnerLookupLimiter;
};

/** Retry-After of a policy_unavailable whose failure named no wait of its own. */
const POLICY_RETRY_AFTER_SECONDS = 5;

interface PolicyStep {
  settings: Settings;
  platform: PlatformSettings;
  app: AppCredentials;
  installation: Installation;
  claims: Readonly<Record<string, unknown>>;
  owner: string;
  repo: string;
  ids: { repositoryId: number; ownerId: number };
  rule?: string;
  /** The request's other `repositories` (names, the caller's own left out): each must consent. */
  targets?: readonly string[];
  deadlineAt?: number;
}

/** Another repository that consented: what it lends, for the grant, the mint and the audit line. */
export interface ConsentedTarget {
  target: TargetRepository;
  /** owner/name as the platform spells it. */
  fullName: string;
  /** `repository <owner/name>`: its consenting rule ∩ the owner rule that holds for it. */
  ceiling: PermissionCeiling;
  rule?: string;
  ownerRule?: string;
  sha?: string;
}

/** What applied, for the grant and the audit line. */
export interface PolicyOutcome {
  decision: Extract<PolicyDecision, { ok: true }>;
  repositorySha?: string;
  ownerSha?: string;
  /** Only when the request named other repositories, in its order. */
  targets?: ConsentedTarget[];
}


export async function applyPolicies(ctx: PolicyDeps, step: PolicyStep): Promise<PolicyOutcome | null> {
  const mode = step.settings.tokenPolicy;
  const targets = step.targets ?? [];
  if (mode === "off") {
    // Consent is written in policies, and with TOKEN_POLICY=off none is read: nobody consents.
    if (targets.length > 0) deny(ctx, step, "repositories needs trust policies (a repository consents in its own .github/tokensmith.yml), and this broker reads none (TOKEN_POLICY=off)", { targets });
    return null;
  }
  // Without contents access the App cannot read any policy: as if none existed (optional), or
  // nothing is given (required). `doctor` says so; the log says it per denial.
  const canRead = step.installation.permissions.contents !== undefined;
  // The owner policy first: under its `repository_policies: ignore` no repository file is read at
  // all (the caller's or a target's), so one the owner chose to ignore can neither fail the job nor
  // cost a parse. Between expiries both reads come from the cache, so the order costs nothing then;
  // the one request that re-checks them on expiry waits one more round trip (docs/security.md).
  const owner = canRead ? await load(ctx, step, "owner") : null;
  const ignore = owner?.policy.ignoreRepositoryPolicies === true;
  const repository = canRead && !ignore ? await load(ctx, step, "repository") : null;
  const decision = decidePolicy({ mode, repository: repository?.policy ?? null, owner: owner?.policy ?? null, claims: step.claims, rule: step.rule, repositoryName: step.repo });
  const named = !canRead && mode === "required"
    ? { ok: false as const, detail: "the App's installation has no contents permission, so no policy can be read, and the broker requires one (TOKEN_POLICY=required)" }
    : step.rule !== undefined && decision.ok && decision.rule === undefined && decision.ownerRule === undefined
      ? { ok: false as const, detail: `no rule named ${step.rule} (no policy applies to this repository)` }
      : decision;
  // The answer names an owner rule only; the log keeps its conditions (`reason`).
  if (!named.ok) deny(ctx, step, named.detail, { ...("reason" in named && named.reason !== undefined ? { reason: named.reason } : {}), policy_sha: repository?.sha, owner_policy_sha: owner?.sha, contents_readable: canRead });

  // Only now the other repositories: a job its own rule denies costs no lookup of them. Each consents
  // in its own policy, or nothing is minted; the caller learns its name only.
  const caller = `${step.owner}/${step.repo}`;
  function refuse(asked: string, why: string, logged: Record<string, unknown>): never {
    deny(ctx, step, consentDenied(asked, caller), { target: asked, consent: why, owner_policy_sha: owner?.sha, ...logged });
  }
  if (!canRead && targets.length > 0) refuse(`${step.owner}/${targets[0]!}`, "the App's installation has no contents permission", {});
  if (ignore) {
    // Consent is then the owner policy's alone, by name: a target no owner rule names is refused
    // before it is looked up.
    for (const name of targets) {
      const byName = decideConsent({ repository: null, owner: owner!.policy, claims: step.claims, targetName: name });
      if (!byName.ok) refuse(`${step.owner}/${name}`, byName.why, {});
    }
  }
  const consulted = await Promise.all(targets.map((name) => loadTarget(ctx, step, name, ignore)));
  const consented: ConsentedTarget[] = [];
  for (const [index, name] of targets.entries()) {
    const seen = consulted[index]!;
    // A denial names the repository as the request spelled it: the platform's spelling would tell
    // an existing repository (`Website` answered as `website`) from one that does not exist.
    const asked = `${step.owner}/${name}`;
    const fullName = seen.target ? `${step.owner}/${seen.target.name}` : asked;
    const why = !seen.target ? "the App cannot see it (no such repository, or not in the installation)"
      : seen.target.ownerId !== step.ids.ownerId ? "another owner"
      : seen.problem ?? undefined;
    const decision = why === undefined ? decideConsent({ repository: seen.policy?.policy ?? null, owner: owner?.policy ?? null, claims: step.claims, targetName: seen.target!.name }) : { ok: false as const, why };
    if (!decision.ok) refuse(asked, decision.why, { target: fullName, target_id: seen.target?.id, target_policy_sha: seen.policy?.sha });
    consented.push({
      target: seen.target!,
      fullName,
      ceiling: { source: `repository ${fullName}`, permissions: decision.permissions },
      ...(decision.rule ? { rule: decision.rule } : {}),
      ...(decision.ownerRule ? { ownerRule: decision.ownerRule } : {}),
      ...(seen.policy ? { sha: seen.policy.sha } : {}),
    });
  }
  return {
    decision: named,
    ...(repository ? { repositorySha: repository.sha } : {}),
    ...(owner ? { ownerSha: owner.sha } : {}),
    ...(targets.length > 0 ? { targets: consented } : {}),
  };
}

function deny(ctx: PolicyDeps, step: PolicyStep, detail: string, logged: Record<string, unknown>): never {
  ctx.log.info({ audit: "token_denied", code: "policy_denied", repository: `${step.owner}/${step.repo}`, repository_id: step.ids.repositoryId, detail, ...logged }, "policy denied the token");
  throw new BrokerError("policy_denied", { detail, answerDetail: detail });
}

/**
 * Another repository: its id (by name, with the reader token), then its policy file through the
 * same cache as the caller's (by repository id), unless the owner policy ignores repository files
 * (`ignore`: never read). A file that does not validate is the target's problem, not the caller's
 * to read: it is a denial (`problem`, logged), never policy_invalid. The platform not answering is
 * 503 policy_unavailable, as for the caller's own file.
 */
async function loadTarget(ctx: PolicyDeps, step: PolicyStep, name: string, ignore: boolean): Promise<{ target: TargetRepository | null; policy?: { policy: CompiledPolicy; sha: string } | null; problem?: string }> {
  const key = ctx.policies.targets.key(step.platform.apiBase, step.installation.id, step.owner, name);
  let target: TargetRepository | null;
  try {
    target = await ctx.policies.targets.get(key, step.settings.policyCacheSeconds * 1000, async () => {
      // A lookup that finds nothing counts against the calling repository's own share of the App's
      // budget (TARGET_LOOKUP_SHARE), apart from the owner's installation lookups: a job naming 20
      // made-up repositories per request spends its repository's share, never its owner's.
      const taken = await ctx.targetLookups.take(`${step.platform.apiBase}\u0000${step.ids.repositoryId}`);
      if (!("settle" in taken)) throw new BrokerError("installation_lookups_limited", { detail: `repository ${step.ids.repositoryId} (repositories)`, retryAfter: taken.retryAfterSeconds });
      let found = false;
      try {
        const seen = await withReader(ctx, step, (token) => fetchTargetRepository({ client: ctx.clientFor(step.platform), token, owner: step.owner, repo: name, deadlineAt: step.deadlineAt }), { name, installed: false });
        found = seen !== null;
        return seen;
      } finally {
        taken.settle(found);
      }
    });
  } catch (error) {
    if (error instanceof BrokerError && error.code === "installation_lookups_limited") throw error;
    throw unavailable(ctx, error, "repository lookup");
  }
  if (!target || target.ownerId !== step.ids.ownerId || ignore) return { target };
  try {
    return { target, policy: await load(ctx, step, "repository", { repo: target.name, repositoryId: target.id }) };
  } catch (error) {
    if (error instanceof BrokerError && error.code === "policy_invalid") return { target, problem: `its policy is invalid: ${error.answerDetail ?? ""}` };
    throw error;
  }
}

/**
 * Something read with the broker's reader token. A token the platform no longer takes (401:
 * revoked, the installation's permissions changed) is dropped and the read is made once more with
 * a fresh one: the jobs waiting on the read get their answer, not 503 policy_unavailable for the
 * broker's own token (reads at the same moment share the one new mint). A second 401 fails it.
 * `repository`: the repository read, when a 404 there would mean "no policy" (docs/security.md "A
 * stale reader token never reads ...").
 */
async function withReader<T>(ctx: PolicyDeps, step: PolicyStep, read: (token: string) => Promise<T>, repository?: ReaderScope): Promise<T> {
  const readerKey = ctx.policies.readers.key(step.platform.apiBase, step.app.appId, step.installation.id);
  for (let attempt = 1; ; attempt += 1) {
    let reader = await ctx.policies.readers.get(readerKey, () => mintReader(ctx, step));
    if (repository && !readerCovers(reader, repository.name) && (repository.installed || ctx.now() - reader.mintedAtMs >= READER_RECHECK_MS)) {
      // Minted before the repository joined the installation (the platform scopes a token to the
      // selection at mint time): its 404 would read as "no policy", the whole grant. A fresh mint
      // covers it. Right away for a repository this request proved installed; for one that may
      // not be (the owner's .github) once per READER_RECHECK_MS at most, not a mint per read.
      ctx.policies.readers.drop(readerKey, reader.token);
      reader = await ctx.policies.readers.get(readerKey, () => mintReader(ctx, step));
    }
    try {
      return await read(reader.token);
    } catch (error) {
      if (!(error instanceof PolicyReadFailure && error.status === 401)) throw error;
      ctx.policies.readers.drop(readerKey, reader.token);
      if (attempt >= 2) throw error;
    }
  }
}

/** The repository a reader reads: `installed` when this request proved it is in the installation (the caller's). */
interface ReaderScope {
  name: string;
  installed: boolean;
}

/** A read that failed on the platform's side → 503 policy_unavailable (fail closed, retryable). */
function unavailable(ctx: PolicyDeps, error: unknown, what: string): BrokerError {
  if (error instanceof BrokerError && error.code === "policy_unavailable") return error;
  const status = error instanceof PolicyReadFailure ? error.status : undefined;
  return new BrokerError("policy_unavailable", {
    detail: `${what}: status ${status ?? "network"}`,
    cause: error,
    retryAfter: transientRetryAfter(error instanceof PolicyReadFailure ? error.cause : error, ctx.now()) ?? POLICY_RETRY_AFTER_SECONDS,
  });
}

/** One policy file, compiled; null when there is none. `other`: another repository's (a target of `repositories`), not the caller's. */
async function load(ctx: PolicyDeps, step: PolicyStep, kind: PolicyKind, other?: { repo: string; repositoryId: number }): Promise<{ policy: CompiledPolicy; sha: string } | null> {
  const path = POLICY_FILES[kind];
  const where = kind === "repository" ? { owner: step.owner, repo: other?.repo ?? step.repo } : { owner: step.owner, repo: ".github" };
  const key = policyFileKey(step.platform.apiBase, kind === "repository" ? { repositoryId: other?.repositoryId ?? step.ids.repositoryId } : { ownerId: step.ids.ownerId });
  const store = ctx.stores.get(step.settings.jwksCacheUrl, "tokensmith-policy");
  // A key-store key's seal secret is its signature of a fixed label: until the signer made it, nothing is shared.
  const sealSecret = store ? sealSecretOf(step.app.key) : null;
  const shared = store && sealSecret ? { store, sealKey: ctx.policies.sealKey(sealSecret) } : null;
  const client = ctx.clientFor(step.platform);
  let state: FileState;
  try {
    state = await ctx.policies.files.read(key, step.settings.policyCacheSeconds * 1000, shared, (etag, known) =>
      withReader(ctx, step, (token) => readPolicyFile({ client, token, ...where, path, etag, known, deadlineAt: step.deadlineAt }), { name: where.repo, installed: kind === "repository" && !other }),
    );
  } catch (error) {
    throw unavailable(ctx, error, `${kind} policy read`);
  }
  if (state.absent) return null;
  const file = kind === "repository" ? (other ? `${step.owner}/${other.repo}/${path}` : path) : `${step.owner}/.github/${path}`;
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
async function mintReader(ctx: PolicyDeps, step: PolicyStep): Promise<ReaderToken> {
  try {
    const minted = await ctx.appJwt.withJwt(step.app, (appJwt) =>
      mintInstallationToken({
        client: ctx.clientFor(step.platform),
        appJwt,
        installationId: step.installation.id,
        permissions: { contents: "read" },
        retry: ctx.retry,
        now: ctx.now,
        deadlineAt: step.deadlineAt,
      }),
    );
    return readerFromMint(minted, ctx.now());
  } catch (error) {
    throw new BrokerError("policy_unavailable", {
      detail: "reader token mint failed",
      cause: error,
      retryAfter: (error instanceof BrokerError ? error.retryAfter : undefined) ?? POLICY_RETRY_AFTER_SECONDS,
    });
  }
}
