// What `policy check` (and the check run) warns about in a policy that compiles: rules that hold for
// jobs their author likely did not mean (docs/policies.md#warnings). Each warning names the file's
// line and the rule; none fails the policy: the broker applies it as written.
import type { CompiledRule } from "./policy-types.js";

/** Patterns longer than this are warned about: the glob matcher's cost grows with a pattern's length. */
export const LONG_PATTERN_CHARACTERS = 256;

/**
 * Claims the author of a pull request chooses or can steer: the branch name of a fork, and the
 * actor (the account whose action triggered the run, which a fork can make a bot's).
 */
const STEERED_CLAIMS: Readonly<Record<string, string>> = {
  actor: "actor",
  "claims.actor": "actor",
  "claims.actor_id": "actor_id",
  "claims.head_ref": "head_ref",
};

export function policyWarnings(rules: readonly CompiledRule[], file: string): string[] {
  const warnings: string[] = [];
  for (const rule of rules) {
    const say = (what: string) => warnings.push(`${file} line ${rule.line}: rule ${rule.name} ${what}`);
    const event = rule.conditions.find((condition) => condition.key === "event");
    const matchesEvent = (name: string) => event === undefined || event.test(name);
    if (Object.values(rule.permissions).includes("write") && !event) {
      say("grants write without an event condition (a pull_request_target job on the default branch would match)");
    }
    const steered = rule.conditions.filter((condition) => Object.hasOwn(STEERED_CLAIMS, condition.key)).map((condition) => condition.key);
    if (steered.length > 0 && matchesEvent("pull_request_target")) {
      say(`trusts ${steered.join(", ")}, which a pull request's author controls, and ${event ? "its event condition matches" : "has no event condition excluding"} pull_request_target (jobs on the default branch with the pull request's input)`);
    }
    if (rule.conditions.some((condition) => condition.key === "workflow") && matchesEvent("pull_request")) {
      say(`pins workflow but ${event ? "its event condition matches" : "has no event condition excluding"} pull_request: a pull request (from a fork too) runs its own copy of that workflow file`);
    }
    const patterns = [...rule.conditions.flatMap((condition) => condition.patterns.map((pattern) => [condition.key, pattern] as const)), ...(rule.repositories?.patterns.map((pattern) => ["repositories", pattern] as const) ?? [])];
    for (const [key, pattern] of patterns) {
      if (pattern.length > LONG_PATTERN_CHARACTERS) say(`has a ${key} pattern of ${pattern.length} characters (over ${LONG_PATTERN_CHARACTERS}): globs that long are slow to match and hard to review`);
    }
  }
  return warnings;
}
