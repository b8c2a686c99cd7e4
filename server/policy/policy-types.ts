// A trust policy once parsed, validated and compiled (docs/policies.md): plain
// values, cached as they are, checked by the pure `checkPolicy`.
import type { Permissions } from "../../shared/token-permissions.js";
import type { GlobTest } from "./policy-glob.js";

export type PolicyKind = "repository" | "owner";

/** The file each kind lives in (the owner's in its `.github` repository). */
export const POLICY_FILES: Readonly<Record<PolicyKind, string>> = { repository: ".github/tokensmith.yml", owner: ".github/tokensmith-org.yml" };

/** One `if` key, ready to test: the claim it reads and the globs it wants. */
export interface CompiledCondition {
  /** As written in the policy: `ref`, `event`, `claims.<name>`, … */
  key: string;
  /** The claim's value for this job; undefined when absent (the condition then fails). */
  read(claims: Readonly<Record<string, unknown>>): string | undefined;
  patterns: readonly string[];
  test: GlobTest;
}

export interface CompiledRule {
  name: string;
  conditions: readonly CompiledCondition[];
  /** Owner policy: the repository names the rule covers; undefined = every repository of the owner. */
  repositories?: { patterns: readonly string[]; test: GlobTest };
  permissions: Permissions;
  /** 1-based line of the rule in its file (for `policy explain` and the check run). */
  line: number;
}

export interface CompiledPolicy {
  kind: PolicyKind;
  rules: readonly CompiledRule[];
  /** Owner policy's `repository_policies: ignore`. */
  ignoreRepositoryPolicies: boolean;
  /** Warnings `policy check` and the check run print (policy-warnings.ts). */
  warnings: readonly string[];
}
