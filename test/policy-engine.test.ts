// The trust-policy engine, pure: YAML → validated, compiled policy (line numbers in every problem),
// GitHub's glob meaning, and checkPolicy's rule choice and one-line denials (table tests).
import { describe, expect, it } from "@jest/globals";
import { checkPolicy } from "../server/policy/check-policy.js";
import { createPolicyCompiler, MAX_POLICY_BYTES } from "../server/policy/compile-policy.js";
import { decideConsent } from "../server/policy/decide-consent.js";
import { decidePolicy } from "../server/policy/decide-policy.js";
import { compileGlob } from "../server/policy/policy-glob.js";
import type { CompiledPolicy, PolicyKind } from "../server/policy/policy-types.js";
import { EXAMPLE_POLICY } from "./support/example-policy.js";

const compiler = createPolicyCompiler();

function compiled(text: string, kind: PolicyKind = "repository"): CompiledPolicy {
  const result = compiler.compile(text, kind, ".github/tokensmith.yml");
  if (!result.ok) throw new Error(result.detail);
  return result.policy;
}
function problem(text: string, kind: PolicyKind = "repository"): string {
  const result = compiler.compile(text, kind, ".github/tokensmith.yml");
  if (result.ok) throw new Error("compiled");
  return result.detail;
}

const POLICY = EXAMPLE_POLICY;

const job = (over: Record<string, unknown> = {}) => ({
  repository: "octo-org/app",
  ref: "refs/tags/v1.2.0",
  event_name: "push",
  workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/tags/v1.2.0",
  ...over,
});

describe("globs with GitHub's meaning", () => {
  it.each([
    ["refs/tags/v*", "refs/tags/v1.2", true],
    ["refs/tags/v*", "refs/tags/v1/evil", false],
    ["refs/heads/**", "refs/heads/a/b/c", true],
    ["refs/heads/rel**", "refs/heads/rel/2/x", true],
    ["refs/heads/main", "refs/heads/main2", false],
    ["refs/heads/main", "xrefs/heads/main", false],
    // `?` repeats the character before it (zero or one), it is not "any one character".
    ["v?.?", "v1.2", false],
    ["v1.2?", "v1.", true],
    ["v[0-9]*", "vx", false],
    ["*", "a/b", false],
    ["**", "a/b", true],
  ])("%s against %s → %s", (pattern, value, expected) => {
    expect(compileGlob(pattern, { caseInsensitive: false })(value)).toBe(expected);
  });

  it("repository names match case-insensitively, other claims exactly", () => {
    expect(compileGlob("Octo-Org/*", { caseInsensitive: true })("octo-org/app")).toBe(true);
    expect(compileGlob("Octo-Org/*", { caseInsensitive: false })("octo-org/app")).toBe(false);
    const policy = compiled(`rules:\n  - name: a\n    if: {repository: OCTO-ORG/App, actor: Octocat}\n    permissions: {contents: read}\n`);
    expect(checkPolicy(policy, job({ actor: "Octocat" })).ok).toBe(true);
    expect(checkPolicy(policy, job({ actor: "octocat" }))).toEqual({ ok: false, detail: "rule a: actor is octocat, wants Octocat" });
  });
});

describe("checkPolicy", () => {
  const policy = compiled(POLICY);

  it("the first rule whose conditions all hold applies", () => {
    const held = checkPolicy(policy, job());
    expect(held.ok && held.rule.name).toBe("release");
    const pr = checkPolicy(policy, job({ event_name: "pull_request", ref: "refs/pull/4/merge" }));
    expect(pr.ok && pr.rule).toMatchObject({ name: "pull-requests", permissions: { contents: "read" } });
  });

  it("a denial names, per rule, the first failed condition, the claim's value and the pattern", () => {
    expect(checkPolicy(policy, job({ ref: "refs/heads/feat-x" }))).toEqual({
      ok: false,
      detail: "rule release: ref is refs/heads/feat-x, wants refs/tags/v*; rule pull-requests: event is push, wants one of pull_request, pull_request_target",
    });
  });

  it("an absent claim fails its condition (never matched as an empty string)", () => {
    const open = compiled(`rules:\n  - name: any-env\n    if: {environment: "**"}\n    permissions: {contents: read}\n`);
    expect(checkPolicy(open, job())).toEqual({ ok: false, detail: "rule any-env: environment is absent, wants **" });
    expect(checkPolicy(open, job({ environment: 42 })).ok).toBe(false);
    expect(checkPolicy(open, job({ environment: "prod" })).ok).toBe(true);
    // Present but empty: as good as absent, even for `**`.
    expect(checkPolicy(open, job({ environment: "" }))).toEqual({ ok: false, detail: "rule any-env: environment is empty, wants **" });
  });

  it("workflow is the path of workflow_ref in the job's own repository", () => {
    expect(checkPolicy(policy, job({ workflow_ref: "octo-org/app/.github/workflows/ci.yml@refs/tags/v1" }))).toMatchObject({
      ok: false, detail: expect.stringContaining("rule release: workflow is .github/workflows/ci.yml, wants .github/workflows/release.yml") as unknown,
    });
    // A workflow of another repository has no path here.
    expect(checkPolicy(policy, job({ workflow_ref: "evil/app/.github/workflows/release.yml@refs/tags/v1" }))).toMatchObject({
      ok: false, detail: expect.stringContaining("workflow is absent") as unknown,
    });
  });

  it("a named rule is the only one tried; an unknown name is a denial", () => {
    expect(checkPolicy(policy, job(), { rule: "pull-requests" })).toEqual({ ok: false, detail: "rule pull-requests: event is push, wants one of pull_request, pull_request_target" });
    expect(checkPolicy(policy, job(), { rule: "nope" })).toEqual({ ok: false, detail: "no rule named nope" });
  });

  it("claims: any string claim, exactly; a denial shows five rules and counts the rest", () => {
    const rules = Array.from({ length: 7 }, (_, i) => `  - name: r${i}\n    if: {claims: {run_attempt: "${i + 10}"}}\n    permissions: {contents: read}\n`).join("");
    const many = compiled(`rules:\n${rules}`);
    const denied = checkPolicy(many, job({ run_attempt: "1" }));
    expect(denied).toEqual({ ok: false, detail: expect.stringMatching(/^rule r0: claims\.run_attempt is 1, wants 10; .*rule r4: .*; and 2 more rules$/) as unknown });
  });

  it("a claim value with a line break stays one line", () => {
    const denied = checkPolicy(policy, job({ ref: "refs/heads/a\nforged line" }));
    expect(denied.ok || denied.detail.includes("\n")).toBe(false);
  });
});

describe("owner policy", () => {
  const owner = compiled(`repository_policies: ignore\nrules:\n  - name: services\n    repositories: [svc-*, API]\n    if: {event: push}\n    permissions: {contents: write}\n`, "owner");

  it("repositories globs on the name, case-insensitively; repository_policies: ignore drops the repository's policy", () => {
    expect(checkPolicy(owner, job(), { repositoryName: "api" }).ok).toBe(true);
    expect(checkPolicy(owner, job(), { repositoryName: "app" })).toEqual({ ok: false, detail: "rule services: repository app is not in one of svc-*, API" });
    const decided = decidePolicy({ mode: "optional", repository: compiled(POLICY), owner, claims: job(), repositoryName: "svc-a" });
    expect(decided).toEqual({ ok: true, ceilings: [{ source: "owner rule services", permissions: { contents: "write" } }], ownerRule: "services", repositoryPolicyIgnored: true });
  });

  it("both apply: the repository's rule and the owner's rule are both ceilings; no owner rule → denied", () => {
    const ceiling = compiled(`rules:\n  - name: reads\n    permissions: {contents: read}\n`, "owner");
    const decided = decidePolicy({ mode: "optional", repository: compiled(POLICY), owner: ceiling, claims: job(), repositoryName: "app" });
    expect(decided.ok && decided.ceilings.map((c) => c.source)).toEqual(["rule release", "owner rule reads"]);
    const narrow = compiled(`rules:\n  - name: svc\n    repositories: [svc-*]\n    permissions: {contents: read}\n`, "owner");
    // The job is told the owner rule's name only; the log gets the reason (the .github repository may be private).
    expect(decidePolicy({ mode: "optional", repository: null, owner: narrow, claims: job(), repositoryName: "app" })).toEqual({
      ok: false,
      detail: "owner policy: rule svc does not hold for this job (its conditions are not shown; the owner's .github/tokensmith-org.yml has them)",
      reason: "owner policy: rule svc: repository app is not in svc-*",
    });
  });

  it("a denial names at most five owner rules, the rest counted", () => {
    const many = compiled(`rules:\n${Array.from({ length: 7 }, (_, i) => `  - name: r${i}\n    repositories: [svc-${i}]\n    permissions: {contents: read}\n`).join("")}`, "owner");
    const decided = decidePolicy({ mode: "optional", repository: null, owner: many, claims: job(), repositoryName: "app" });
    expect(decided).toMatchObject({ ok: false, detail: "owner policy: no rule holds (r0, r1, r2, r3, r4, and 2 more rules) for this job (its conditions are not shown; the owner's .github/tokensmith-org.yml has them)" });
  });

  it("modes: optional without a policy keeps the API's behaviour, required denies", () => {
    expect(decidePolicy({ mode: "optional", repository: null, owner: null, claims: job(), repositoryName: "app" })).toEqual({ ok: true, ceilings: [], repositoryPolicyIgnored: false });
    expect(decidePolicy({ mode: "required", repository: null, owner: null, claims: job(), repositoryName: "app" })).toMatchObject({ ok: false, detail: expect.stringContaining("TOKEN_POLICY=required") as unknown });
  });
});

describe("invalid policies say where", () => {
  it.each([
    ["rules:\n  - name: a\n    permissions: {contents: read}\n    iff: {ref: x}\n", "line 2: rules.0: unknown key iff"],
    ["rules:\n  - name: a\n    if:\n      branch: main\n    permissions: {contents: read}\n", "line 4: rules.0.if: unknown key branch"],
    ["rules:\n  - name: a\n    permissions: {contents: admin}\n", "line 3: rules.0.permissions.contents: must be one of read, write"],
    ["rules:\n  - name: a\n    permissions: {contents_x: read}\n", "line 3: rule a: unknown permission contents_x"],
    ["rules:\n  - name: Bad Name\n    permissions: {contents: read}\n", "line 2: rules.0.name: must match pattern"],
    ["rules:\n  - name: a\n    permissions: {contents: read}\n  - name: a\n    permissions: {contents: read}\n", "line 4: rule name a is used twice"],
    ["rules: [\n", "line 2: not valid YAML"],
    ["rules:\n  - name: a\n    name: b\n    permissions: {contents: read}\n", "line 3: not valid YAML (duplicate key)"],
    ["repository_policies: ignore\nrules:\n  - name: a\n    permissions: {contents: read}\n", "line 1: repository_policies belongs in the owner policy"],
    ["rules:\n  - name: a\n    repositories: [x]\n    permissions: {contents: read}\n", "line 3: rule a: repositories belongs in the owner policy"],
    ["{}\n", ": the policy: missing rules"],
    // A glob GitHub gives no meaning: the rule, the pattern and why (policy_invalid's detail).
    ["rules:\n  - name: a\n    if: {ref: \"refs/heads/[^a]*\"}\n    permissions: {contents: read}\n", 'line 2: rule a: pattern "refs/heads/[^a]*" is not a valid glob: [^a] at character 12: negated classes are not supported'],
    ["rules:\n  - name: a\n    if: {claims: {sub: \"?x\"}}\n    permissions: {contents: read}\n", 'line 2: rule a: pattern "?x" is not a valid glob: ? at character 1 follows no single character'],
  ])("%j", (text, where) => {
    expect(problem(text)).toContain(where);
  });

  it("files over 64 KiB and alias bombs are refused", () => {
    expect(problem(`# ${"x".repeat(MAX_POLICY_BYTES)}\nrules: []\n`)).toMatch(/over 64 KiB/);
    const bomb = `a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\nrules: []\n`;
    expect(problem(bomb)).toMatch(/alias/);
  });

  it("a write grant without an event condition is warned about", () => {
    const policy = compiled(`rules:\n  - name: main\n    if: {ref: refs/heads/main}\n    permissions: {contents: write}\n`);
    expect(policy.warnings).toEqual([".github/tokensmith.yml line 2: rule main grants write without an event condition (a pull_request_target job on the default branch would match)"]);
    expect(compiled(POLICY).warnings).toEqual([]);
  });
});

describe("consent under repository_policies: ignore: an owner rule lends only what its repositories name", () => {
  const ownerWith = (repositories: string | null) =>
    compiled(`repository_policies: ignore\nrules:\n  - name: lend\n${repositories === null ? "" : `    repositories: ${repositories}\n`}    if: {repository: octo-org/app}\n    permissions: {contents: write}\n`, "owner");
  it.each([
    ["no repositories", null, "other", false],
    ["no repositories, .github", null, ".github", false],
    ["listed", "[other]", "other", true],
    ["not listed", "[other]", "secrets-store", false],
    ["*", '["*"]', "secrets-store", true],
    ["* never lends .github", '["*"]', ".github", false],
    [".git* never lends .github", '[".git*"]', ".github", false],
    [".github named literally", "[.github]", ".github", true],
    [".github named literally, any case", "[.GitHub]", ".github", true],
    [".github named literally beside a glob", '["*", .github]', ".github", true],
  ])("%s", (_what, repositories, target, lends) => {
    expect(decideConsent({ repository: null, owner: ownerWith(repositories), claims: job(), targetName: target }).ok).toBe(lends);
  });

  it("a rule without a repository condition never lends, whatever its repositories", () => {
    const owner = compiled(`repository_policies: ignore\nrules:\n  - name: all\n    repositories: ["*"]\n    permissions: {contents: write}\n`, "owner");
    expect(decideConsent({ repository: null, owner, claims: job(), targetName: "other" }).ok).toBe(false);
  });
});
