// Which policies apply to a job and what they allow (docs/policies.md), pure: the
// repository policy (unless the owner policy says `repository_policies: ignore`), then the owner
// policy as a ceiling. The caller has read both files; this only decides.
import type { PermissionCeiling } from "../token/grant-permissions.js";
import { checkPolicy, ownerDenial } from "./check-policy.js";
import type { CompiledPolicy } from "./policy-types.js";

export type PolicyMode = "optional" | "required" | "off";

interface PolicyInputs {
  mode: Exclude<PolicyMode, "off">;
  /** null: no file (404). */
  repository: CompiledPolicy | null;
  owner: CompiledPolicy | null;
  claims: Readonly<Record<string, unknown>>;
  /** The `rule` field of the request: a rule of the repository policy, or of the owner policy when it alone applies. */
  rule?: string;
  /** The repository's name without its owner. */
  repositoryName: string;
}

export type PolicyDecision =
  | { ok: true; ceilings: PermissionCeiling[]; rule?: string; ownerRule?: string; repositoryPolicyIgnored: boolean }
  /** `detail`: what the job is told; `reason`: the full one, for the broker's log only (an owner policy's conditions). */
  | { ok: false; detail: string; reason?: string };

export function decidePolicy(input: PolicyInputs): PolicyDecision {
  const ignored = input.owner?.ignoreRepositoryPolicies === true;
  const repository = ignored ? null : input.repository;
  if (!repository && !input.owner) {
    if (input.mode === "required") return { ok: false, detail: "no policy applies to this repository and the broker requires one (TOKEN_POLICY=required)" };
    return { ok: true, ceilings: [], repositoryPolicyIgnored: false };
  }
  const ceilings: PermissionCeiling[] = [];
  let rule: string | undefined;
  if (repository) {
    const held = checkPolicy(repository, input.claims, { rule: input.rule });
    if (!held.ok) return { ok: false, detail: held.detail };
    rule = held.rule.name;
    ceilings.push({ source: `rule ${rule}`, permissions: held.rule.permissions });
  }
  let ownerRule: string | undefined;
  if (input.owner) {
    const options = { rule: repository ? undefined : input.rule, repositoryName: input.repositoryName };
    const held = checkPolicy(input.owner, input.claims, options);
    if (!held.ok) return { ok: false, detail: ownerDenial(input.owner, options), reason: `owner policy: ${held.detail}` };
    ownerRule = held.rule.name;
    ceilings.push({ source: `owner rule ${ownerRule}`, permissions: held.rule.permissions });
  }
  return { ok: true, ceilings, ...(rule ? { rule } : {}), ...(ownerRule ? { ownerRule } : {}), repositoryPolicyIgnored: ignored && input.repository !== null };
}
