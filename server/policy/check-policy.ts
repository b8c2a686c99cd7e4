// The trust decision, pure (STYLE.md practice 6): which rule of a compiled policy holds for a job's
// claims, or a denial whose one line says, per rule, the first condition that failed, the claim's
// value and what the rule wants (`rule release: ref is refs/heads/feat-x, wants refs/tags/v*`).
import type { CompiledCondition, CompiledPolicy, CompiledRule } from "./policy-types.js";

/** How many rules a denial's detail describes; the rest are counted. */
export const DENIAL_RULES_SHOWN = 5;

export type PolicyCheck = { ok: true; rule: CompiledRule } | { ok: false; detail: string };

export interface CheckOptions {
  /** The rule the request names (`rule` field); only it is tried. */
  rule?: string;
  /** The repository's name without its owner (owner policy rules' `repositories`). */
  repositoryName?: string;
}

/** The first rule (or the named one) whose conditions all hold. */
export function checkPolicy(policy: CompiledPolicy, claims: Readonly<Record<string, unknown>>, options: CheckOptions = {}): PolicyCheck {
  const candidates = options.rule === undefined ? policy.rules : policy.rules.filter((rule) => rule.name === options.rule);
  if (candidates.length === 0) return { ok: false, detail: `no rule named ${options.rule}` };
  const reasons: string[] = [];
  for (const rule of candidates) {
    const why = ruleFails(rule, claims, options.repositoryName);
    if (why === undefined) return { ok: true, rule };
    reasons.push(`rule ${rule.name}: ${why}`);
  }
  const shown = reasons.slice(0, DENIAL_RULES_SHOWN);
  const more = reasons.length - shown.length;
  return { ok: false, detail: shown.join("; ") + (more > 0 ? `; and ${more} more rule${more === 1 ? "" : "s"}` : "") };
}

/** Why one rule does not hold (its first failed condition), or undefined when it holds. */
export function ruleFails(rule: CompiledRule, claims: Readonly<Record<string, unknown>>, repositoryName?: string): string | undefined {
  if (rule.repositories) {
    if (repositoryName === undefined || !rule.repositories.test(repositoryName)) return `repository ${repositoryName ?? "(unknown)"} is not in ${wants(rule.repositories.patterns)}`;
  }
  for (const condition of rule.conditions) {
    const why = conditionFails(condition, claims);
    if (why !== undefined) return why;
  }
  return undefined;
}

function conditionFails(condition: CompiledCondition, claims: Readonly<Record<string, unknown>>): string | undefined {
  const value = condition.read(claims);
  if (value === undefined) return `${condition.key} is absent, wants ${wants(condition.patterns)}`;
  if (value === "") return `${condition.key} is empty, wants ${wants(condition.patterns)}`;
  if (condition.test(value)) return undefined;
  return `${condition.key} is ${oneLine(value)}, wants ${wants(condition.patterns)}`;
}

const wants = (patterns: readonly string[]) => (patterns.length === 1 ? oneLine(patterns[0]!) : `one of ${patterns.map(oneLine).join(", ")}`);

/** A claim's value as it goes into a one-line detail: no line breaks, bounded. */
function oneLine(value: string): string {
  const flat = value.replace(/[\u0000-\u001f\u007f]/g, "?");
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}
