// The trust decision, pure (docs/design.md#layers): which rule of a compiled policy holds for a job's
// claims, or a denial whose one line says, per rule, the first condition that failed, the claim's
// value and what the rule wants (`rule release: ref is refs/heads/feat-x, wants refs/tags/v*`).
import type { CompiledCondition, CompiledPolicy, CompiledRule } from "./policy-types.js";

/** How many rules a denial's detail describes; the rest are counted. */
export const DENIAL_RULES_SHOWN = 5;

type PolicyCheck = { ok: true; rule: CompiledRule } | { ok: false; detail: string };

interface CheckOptions {
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
  return { ok: false, detail: listed(reasons, "; ") };
}

/**
 * A denial by the owner policy (`checkPolicy` found no rule) as the job is told it: the rules' names only. Their conditions and
 * `repositories` lists stay in the owner's `.github` repository, which the job's repository may not
 * be able to read (docs/security.md); the broker's audit line has the full reason.
 */
export function ownerDenial(policy: CompiledPolicy, options: Pick<CheckOptions, "rule"> = {}): string {
  const tried = policy.rules.filter((rule) => options.rule === undefined || rule.name === options.rule).map((rule) => rule.name);
  if (tried.length === 0) return `owner policy: no rule named ${options.rule}`;
  const which = tried.length === 1 ? `rule ${tried[0]!} does not hold` : `no rule holds (${listed(tried, ", ")})`;
  return `owner policy: ${which} for this job (its conditions are not shown; the owner's .github/tokensmith-org.yml has them)`;
}

/** Up to DENIAL_RULES_SHOWN entries, the rest counted. */
function listed(entries: readonly string[], separator: string): string {
  const shown = entries.slice(0, DENIAL_RULES_SHOWN);
  const more = entries.length - shown.length;
  return shown.join(separator) + (more > 0 ? `${separator}and ${more} more rule${more === 1 ? "" : "s"}` : "");
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
