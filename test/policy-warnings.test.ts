// What `policy check` and the check run warn about (server/policy/policy-warnings.ts,
// docs/policies.md#warnings), as table tests on compiled policies: each warning's rule, line and
// wording, and the rules that must stay quiet.
import { describe, expect, it } from "@jest/globals";
import { createPolicyCompiler } from "../server/policy/compile-policy.js";
import { LONG_PATTERN_CHARACTERS } from "../server/policy/policy-warnings.js";
import { EXAMPLE_POLICY } from "./support/example-policy.js";

const compiler = createPolicyCompiler();
function warnings(text: string): readonly string[] {
  const result = compiler.compile(text, "repository", "p.yml");
  if (!result.ok) throw new Error(result.detail);
  return result.policy.warnings;
}
const rule = (conditions: string, permissions = "{contents: read}") => `rules:\n  - name: r\n    if: ${conditions}\n    permissions: ${permissions}\n`;

const PRT = "a pull request's author controls";
describe("policy warnings", () => {
  it.each([
    ["a write grant without an event condition", rule("{ref: refs/heads/main}", "{contents: write}"), ["p.yml line 2: rule r grants write without an event condition (a pull_request_target job on the default branch would match)"]],
    ["actor, no event condition", rule("{actor: octocat}"), [`p.yml line 2: rule r trusts actor, which ${PRT}, and has no event condition excluding pull_request_target (jobs on the default branch with the pull request's input)`]],
    ["claims.head_ref with pull_request_target", rule("{event: pull_request_target, claims: {head_ref: release-*}}"), [`p.yml line 2: rule r trusts claims.head_ref, which ${PRT}, and its event condition matches pull_request_target (jobs on the default branch with the pull request's input)`]],
    ["claims.actor and claims.actor_id with an event glob that matches it", rule('{event: "pull_request*", claims: {actor: octocat, actor_id: "1"}}'), [`p.yml line 2: rule r trusts claims.actor, claims.actor_id, which ${PRT}, and its event condition matches pull_request_target (jobs on the default branch with the pull request's input)`]],
    ["workflow with pull_request", rule("{workflow: .github/workflows/ci.yml, event: [push, pull_request]}"), ["p.yml line 2: rule r pins workflow but its event condition matches pull_request: a pull request (from a fork too) runs its own copy of that workflow file"]],
    ["workflow without an event condition", rule("{workflow: .github/workflows/ci.yml}"), ["p.yml line 2: rule r pins workflow but has no event condition excluding pull_request: a pull request (from a fork too) runs its own copy of that workflow file"]],
    ["a long pattern", rule(`{event: push, ref: refs/heads/${"a".repeat(LONG_PATTERN_CHARACTERS)}}`), [`p.yml line 2: rule r has a ref pattern of ${LONG_PATTERN_CHARACTERS + 11} characters (over ${LONG_PATTERN_CHARACTERS}): globs that long are slow to match and hard to review`]],
    ["a long pattern among claims", rule(`{event: push, claims: {sub: ["x", "${"*".repeat(LONG_PATTERN_CHARACTERS + 1)}"]}}`), [`p.yml line 2: rule r has a claims.sub pattern of ${LONG_PATTERN_CHARACTERS + 1} characters (over ${LONG_PATTERN_CHARACTERS}): globs that long are slow to match and hard to review`]],
    ["all at once, in rule order", `rules:\n  - name: a\n    if: {event: push}\n    permissions: {contents: read}\n${rule("{actor: octocat, workflow: w.yml}", "{contents: write}").replace("rules:\n", "")}`, [
      "p.yml line 5: rule r grants write without an event condition (a pull_request_target job on the default branch would match)",
      `p.yml line 5: rule r trusts actor, which ${PRT}, and has no event condition excluding pull_request_target (jobs on the default branch with the pull request's input)`,
      "p.yml line 5: rule r pins workflow but has no event condition excluding pull_request: a pull request (from a fork too) runs its own copy of that workflow file",
    ]],
  ])("%s", (_, text, expected) => {
    expect(warnings(text)).toEqual(expected);
  });

  it.each([
    ["the docs' example policy", EXAMPLE_POLICY],
    ["actor with push only", rule("{actor: octocat, event: push}", "{contents: write}")],
    ["head_ref with pull_request only (not pull_request_target)", rule("{event: pull_request, claims: {head_ref: feat-*}}")],
    ["workflow with push and pull_request_target (the default branch's copy of the file runs)", rule("{workflow: .github/workflows/ci.yml, event: [push, pull_request_target]}")],
    ["a pattern of exactly the length warned beyond", rule(`{event: push, ref: "${"a".repeat(LONG_PATTERN_CHARACTERS)}"}`)],
  ])("no warning: %s", (_, text) => {
    expect(warnings(text)).toEqual([]);
  });
});
