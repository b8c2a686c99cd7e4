// `tokensmith policy check` and `tokensmith policy explain` on files in a temporary directory: exit
// codes, line numbers, the warnings (a write grant without an event condition, …), plain YAML only,
// and explain's rule, grant and reasons. Each subcommand runs as a child process (bin/tokensmith.js
// → build/server/cli: argv, exit codes 0 and 1, stdout apart from stderr, TOKEN_PERMISSIONS from
// the environment); the other cases call the same entry, runCli, in this process (each child is
// about 0.2 s of CPU, nearly all of it loading modules).
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { cliInProcess, type CliRun } from "./support/cli-in-process.js";
import { EXAMPLE_POLICY } from "./support/example-policy.js";

const BIN = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));
let dir: string;

const POLICY = EXAMPLE_POLICY;
const JOB = { repository: "octo-org/app", ref: "refs/heads/feat-x", event_name: "push", workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/feat-x" };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tokensmith-policy-"));
  await mkdir(join(dir, ".github"));
  await writeFile(join(dir, ".github/tokensmith.yml"), POLICY);
  await writeFile(join(dir, "bad.yml"), "rules:\n  - name: release\n    if: {branch: main}\n    permissions: {contents: write}\n");
  await writeFile(join(dir, "warn.yml"), "rules:\n  - name: main\n    if: {ref: refs/heads/main}\n    permissions: {contents: write}\n");
  await writeFile(join(dir, "tokensmith-org.yml"), "repository_policies: ignore\nrules:\n  - name: reads\n    permissions: {contents: read}\n");
  await writeFile(join(dir, "denied.json"), JSON.stringify(JOB));
  await writeFile(join(dir, "website.yml"), "rules:\n  - name: own-ci\n    if: {event: push}\n    permissions: {contents: write}\n  - name: from-app\n    if: {repository: octo-org/app, ref: refs/tags/v*}\n    permissions: {contents: write, issues: read}\n");
  const payload = Buffer.from(JSON.stringify({ ...JOB, ref: "refs/tags/v2.0.0" })).toString("base64url");
  await writeFile(join(dir, "tag.jwt"), `eyJhbGciOiJSUzI1NiJ9.${payload}.c2ln\n`);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `tokensmith policy …` as a child process in `dir`, with only PATH and `env` in its environment. */
function cli(args: string[], env: Record<string, string> = {}) {
  return new Promise<CliRun>((resolve) => {
    execFile(process.execPath, [BIN, "policy", ...args], { cwd: dir, env: { PATH: process.env.PATH ?? "", ...env }, timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The same command in this process (runCli), reading files from `dir`; a request fails it (the command is offline). */
function policy(args: string[], env: Record<string, string> = {}) {
  const offline: typeof fetch = async (input) => {
    throw new Error(`tokensmith policy made a request: ${String(input)}`);
  };
  return cliInProcess(["policy", ...args], env, { cwd: dir, fetch: offline });
}

describe("tokensmith policy check", () => {
  it("a valid policy (default .github/tokensmith.yml): exit 0, its rules named", async () => {
    expect(await cli(["check"])).toEqual({ code: 0, stdout: ".github/tokensmith.yml: valid repository policy, 2 rules: release, pull-requests\n", stderr: "" });
  });

  it("an invalid policy: exit 1 and the line", async () => {
    expect(await cli(["check", "bad.yml"])).toEqual({ code: 1, stdout: "", stderr: "bad.yml line 3: rules.0.if: unknown key branch\n" });
  });

  it("a write grant without an event condition: valid, with a warning", async () => {
    const result = await policy(["check", "warn.yml"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("warning: warn.yml line 2: rule main grants write without an event condition (a pull_request_target job on the default branch would match)\n");
  });

  it("tokensmith-org.yml is checked as an owner policy; a missing file or unknown word is exit 2", async () => {
    expect((await policy(["check", "tokensmith-org.yml"])).stdout).toBe("tokensmith-org.yml: valid owner policy, 1 rule: reads\n");
    expect(await policy(["check", "nope.yml"])).toMatchObject({ code: 2, stderr: "tokensmith policy: cannot read nope.yml: ENOENT\n" });
    expect((await policy(["frobnicate"])).code).toBe(2);
  });
});

describe("tokensmith policy check: warnings, plain YAML and the caps", () => {
  it("each warning on stderr with its line, the file still valid (exit 0)", async () => {
    const text = "rules:\n  - name: bot\n    if: {actor: \"dependabot[bot]\", workflow: .github/workflows/ci.yml}\n    permissions: {contents: read}\n  - name: branches\n    if: {event: pull_request_target, claims: {head_ref: release-*}}\n    permissions: {pull_requests: write}\n";
    await writeFile(join(dir, "warns.yml"), text);
    expect(await policy(["check", "warns.yml"])).toEqual({
      code: 0,
      stdout: "warns.yml: valid repository policy, 2 rules: bot, branches\n",
      stderr: [
        "warning: warns.yml line 2: rule bot trusts actor, which a pull request's author controls, and has no event condition excluding pull_request_target (jobs on the default branch with the pull request's input)",
        "warning: warns.yml line 2: rule bot pins workflow but has no event condition excluding pull_request: a pull request (from a fork too) runs its own copy of that workflow file",
        "warning: warns.yml line 5: rule branches trusts claims.head_ref, which a pull request's author controls, and its event condition matches pull_request_target (jobs on the default branch with the pull request's input)",
        "",
      ].join("\n"),
    });
  });

  it.each([
    ["binary.yml", "rules:\n  - name: !!binary YQ==\n    permissions: {contents: read}\n", "binary.yml line 2: YAML tag !!binary is not supported (a policy is plain YAML: no !tags, !!binary, !!set or !!omap)\n"],
    ["merge.yml", "rules:\n  - name: a\n    if: &on {event: push}\n    permissions: {contents: read}\n  - name: b\n    if: {<<: *on}\n    permissions: {contents: read}\n", "merge.yml line 6: YAML merge keys (<<) are not supported: write the keys out\n"],
    ["yaml11.yml", "%YAML 1.1\n---\nrules: []\n", "yaml11.yml line 1: YAML directive %YAML is not supported\n"],
    ["long.yml", `rules:\n  - name: a\n    if: {event: push, ref: [${"x, ".repeat(3000)}x]}\n    permissions: {contents: read}\n`, "long.yml line 3: more than 8000 YAML tokens (docs/policies.md#limits)\n"],
  ])("%s: exit 1 naming what is refused", async (file, text, stderr) => {
    await writeFile(join(dir, file), text);
    expect(await policy(["check", file])).toEqual({ code: 1, stdout: "", stderr });
  });
});

describe("tokensmith policy explain", () => {
  it("a denied job: each rule's failed condition, the broker's answer, exit 1", async () => {
    const result = await cli(["explain", "--claims", "denied.json"]);
    expect(result).toEqual({
      code: 1,
      stderr: "",
      stdout: [
        "repository policy:",
        "  rule release (line 2): ref is refs/heads/feat-x, wants refs/tags/v*",
        "  rule pull-requests (line 8): event is push, wants one of pull_request, pull_request_target",
        "refused: 403 policy_denied: rule release: ref is refs/heads/feat-x, wants refs/tags/v*; rule pull-requests: event is push, wants one of pull_request, pull_request_target",
        "",
      ].join("\n"),
    });
  });

  it("a tag job (claims from the JWT itself): the rule that holds and the grant, cut by TOKEN_PERMISSIONS", async () => {
    const result = await cli(["explain", "--claims", "tag.jwt"], { TOKEN_PERMISSIONS: "contents=write,issues=write" });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("  rule release (line 2): holds\n");
    expect(result.stdout).toContain("applies: rule release\n");
    expect(result.stdout).toContain("grant: contents: write (TOKEN_PERMISSIONS ∩ rule release; the installation may narrow it further)\n");
  });

  it("an owner policy that ignores repository policies; --repo for claims without one", async () => {
    const result = await policy(["explain", "--claims", "denied.json", "--owner-policy", "tokensmith-org.yml", "--repo", "octo-org/app"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("repository policy: ignored (the owner policy says repository_policies: ignore)\n");
    expect(result.stdout).toContain("grant: contents: read (TOKEN_PERMISSIONS ∩ owner rule reads; the installation may narrow it further)\n");
  });

  it("--consent NAME: whether another repository's policy consents to the job (only rules with a repository condition do), and what it lends", async () => {
    const denied = await policy(["explain", "--claims", "denied.json", "--consent", "website", "--policy", "website.yml"]);
    expect(denied).toEqual({
      code: 1,
      stderr: "",
      stdout: [
        "repository policy of octo-org/website:",
        "  rule own-ci (line 2): has no repository condition (only such rules consent)",
        "  rule from-app (line 5): ref is refs/heads/feat-x, wants refs/tags/v*",
        "refused: 403 policy_denied: repository octo-org/website does not consent to a token for octo-org/app from this job (a rule of its own .github/tokensmith.yml with a repository condition must hold) (here: no rule with a repository condition holds)",
        "",
      ].join("\n"),
    });
    const tag = await policy(["explain", "--claims", "tag.jwt", "--consent", "octo-org/website", "--policy", "website.yml"]);
    expect(tag.code).toBe(0);
    expect(tag.stdout).toContain("  rule from-app (line 5): consents\n");
    expect(tag.stdout).toContain("consents: rule from-app\nlends: contents: write, issues: read (the token for octo-org/app and octo-org/website gets no more than this ∩ its own grant)\n");
    expect((await policy(["explain", "--claims", "tag.jwt", "--consent", "other-org/website", "--policy", "website.yml"])).code).toBe(2);
  });

  it("an invalid policy is what the broker would answer: policy_invalid with the line", async () => {
    expect(await policy(["explain", "--claims", "denied.json", "--policy", "bad.yml"])).toEqual({ code: 1, stderr: "", stdout: "refused: 403 policy_invalid: bad.yml line 3: rules.0.if: unknown key branch\n" });
    expect((await policy(["explain"])).code).toBe(2);
  });
});
