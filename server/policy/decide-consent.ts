// Whether another repository of the owner consents to a token that also covers it
// (docs/policies.md#other-repositories), pure: the target's own policy must have a rule whose `if`
// has a `repository` condition (only such rules consent: a rule written for the target's own jobs
// never lends the target to another repository) and whose conditions all hold for the job's claims
// (the `repository` claim is the caller's). The owner policy is a ceiling as for any repository;
// with its `repository_policies: ignore`, the target's file is disregarded and consent can only come
// from an owner rule that names the target: a `repository` condition, and a `repositories` list that
// covers the target (no list lends nothing: a rule meant as the ceiling of one repository's own jobs
// must not lend every repository of the owner). The owner's `.github` repository, which holds the
// owner policy itself, is lent only by a list that names it literally, never by a glob such as `*`
// (docs/policies.md#other-repositories).
import type { PermissionCeiling } from "../token/grant-permissions.js";
import { grantPermissions } from "../token/grant-permissions.js";
import { checkPolicy, ruleFails } from "./check-policy.js";
import type { CompiledPolicy, CompiledRule } from "./policy-types.js";

interface ConsentInputs {
  /** The target's `.github/tokensmith.yml`; null: none (or it cannot be read). */
  repository: CompiledPolicy | null;
  owner: CompiledPolicy | null;
  claims: Readonly<Record<string, unknown>>;
  /** The target's name without its owner (owner rules' `repositories`). */
  targetName: string;
}

type ConsentDecision =
  /** `permissions`: what the target lends (its consenting rule ∩ the owner rule that holds for it). */
  | { ok: true; permissions: PermissionCeiling["permissions"]; rule?: string; ownerRule?: string }
  /** `why`: for the broker's log only; the caller is told the target's name and nothing of its rules. */
  | { ok: false; why: string };

/** The denial a non-consenting target gets, whatever the cause (no policy, no rule, not visible to the App): its name only. */
export function consentDenied(fullName: string, caller: string): string {
  return `repository ${fullName} does not consent to a token for ${caller} from this job (a rule of its own .github/tokensmith.yml with a repository condition must hold)`;
}

/** A rule consents only when its `if` names the calling repository. */
export const consents = (rule: CompiledRule): boolean => rule.conditions.some((condition) => condition.key === "repository");

/** The owner's repository that holds its policy: lent only when named as it is, never by a glob. */
const OWNER_POLICY_REPOSITORY = ".github";

/** An owner rule names the target: its `repositories` covers it (`.github` only when listed literally). */
function ownerRuleLends(rule: CompiledRule, targetName: string): boolean {
  if (!rule.repositories || !rule.repositories.test(targetName)) return false;
  if (targetName.toLowerCase() !== OWNER_POLICY_REPOSITORY) return true;
  return rule.repositories.patterns.some((pattern) => pattern.toLowerCase() === OWNER_POLICY_REPOSITORY);
}

export function decideConsent(input: ConsentInputs): ConsentDecision {
  const { claims, targetName, owner } = input;
  if (owner?.ignoreRepositoryPolicies) {
    const rule = owner.rules.find((candidate) => consents(candidate) && ownerRuleLends(candidate, targetName) && ruleFails(candidate, claims, targetName) === undefined);
    if (!rule) return { ok: false, why: "repository_policies: ignore, and no owner rule with a repository condition whose repositories name it holds" };
    return { ok: true, permissions: { ...rule.permissions }, ownerRule: rule.name };
  }
  if (!input.repository) return { ok: false, why: "no policy" };
  const rule = input.repository.rules.find((candidate) => consents(candidate) && ruleFails(candidate, claims) === undefined);
  if (!rule) {
    const any = input.repository.rules.some(consents);
    return { ok: false, why: any ? "no rule with a repository condition holds" : "no rule has a repository condition" };
  }
  if (!owner) return { ok: true, permissions: { ...rule.permissions }, rule: rule.name };
  const held = checkPolicy(owner, claims, { repositoryName: targetName });
  if (!held.ok) return { ok: false, why: `owner policy: ${held.detail}` };
  const both = grantPermissions({ ceilings: [{ source: "rule", permissions: rule.permissions }, { source: "owner rule", permissions: held.rule.permissions }] });
  return { ok: true, permissions: both.ok ? both.permissions : {}, rule: rule.name, ownerRule: held.rule.name };
}
