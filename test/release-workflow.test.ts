// release.yml's own steps, run as written against a sandbox (a real broker and the platform
// simulator over loopback HTTP): the bump's shell steps (changelog, npm version, the /sign body
// built with jq and sent with curl) make one platform-signed commit on the branch, and a stale
// head commits nothing; each `uses: ./` step's inputs, given to the bundled action, get a token
// with exactly the narrowed permissions the step asks for; so do the example workflows' steps
// (examples/workflows: the pull-request job's token reads only).
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { parse } from "yaml";
import { startSandbox, type Sandbox } from "../server/sandbox/index.js";
import { compileCacheEnv } from "./support/action-runner.js";

type Step = { name?: string; id?: string; uses?: string; run?: string; env?: Record<string, string>; with?: Record<string, string> };
type Workflow = { env: Record<string, string>; jobs: Record<string, { steps: Step[] }> };

const root = new URL("../", import.meta.url);
const workflow = parse(readFileSync(new URL(".github/workflows/release.yml", root), "utf8")) as Workflow;
const REPOSITORY = "octo-org/tokensmith";

const CHANGELOG = `# Changelog

## [Unreleased]

### Added

- The release workflow.

## [0.1.0] - 2026-11-26

### Added

- Everything so far.
`;
const PACKAGE = { name: "tokensmith", version: "0.1.0" };
const LOCK = { name: "tokensmith", version: "0.1.0", lockfileVersion: 3, requires: true, packages: { "": { name: "tokensmith", version: "0.1.0" } } };

let sandbox: Sandbox;
const scratch = mkdtempSync(join(tmpdir(), "tokensmith-release-"));

beforeAll(async () => {
  sandbox = await startSandbox({
    world: {
      organisation: "octo-org",
      permissions: { contents: "write", workflows: "write", pull_requests: "write", metadata: "read" },
      repositories: [
        { name: "tokensmith", branches: { main: { "CHANGELOG.md": CHANGELOG, "package.json": `${JSON.stringify(PACKAGE, null, 2)}\n` } } },
        // release-two-repositories.yml's second repository (its consent is set where that example runs).
        { name: "website" },
      ],
    },
    // What docs/versioning.md asks of a fork's broker, and pull requests for the examples.
    env: { TOKEN_PERMISSIONS: "contents=write,workflows=write,pull_requests=write" },
  });
});
afterAll(async () => {
  await sandbox.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** A checkout as the bump job sees it: the changelog script, CHANGELOG.md, package.json and its lock. */
function checkout(): string {
  const dir = mkdtempSync(join(scratch, "checkout-"));
  mkdirSync(join(dir, "scripts"));
  copyFileSync(new URL("scripts/changelog.js", root), join(dir, "scripts", "changelog.js"));
  writeFileSync(join(dir, "CHANGELOG.md"), CHANGELOG);
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "tokensmith", version: "0.1.0", type: "module" }, null, 2)}\n`);
  writeFileSync(join(dir, "package-lock.json"), `${JSON.stringify(LOCK, null, 2)}\n`);
  return dir;
}

const bumpStep = (name: string) => {
  const step = workflow.jobs.bump!.steps.find((candidate) => candidate.name?.startsWith(name));
  if (!step?.run) throw new Error(`release.yml's bump job has no step "${name}…" with a script`);
  return step;
};

/**
 * Runs one step's script with bash as the runner does (`bash -e`), with the variables it reads.
 * Asynchronously: the sandbox's broker answers curl from this process's event loop.
 */
async function runStep(step: Step, dir: string, env: Record<string, string>) {
  const output = join(dir, "github-output");
  writeFileSync(output, "");
  // Every variable the step's env: names is given here (the runner would fill them from expressions).
  for (const name of Object.keys(step.env ?? {})) expect([name, name in env]).toEqual([name, true]);
  const child = spawn("bash", ["--noprofile", "--norc", "-eo", "pipefail", "-c", step.run!], {
    cwd: dir,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME!, GITHUB_OUTPUT: output, ...workflow.env, TOKENSMITH_BROKER_URL: sandbox.brokerUrl, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout.on("data", (chunk: Buffer) => (log += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (log += chunk.toString("utf8")));
  const status = await new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", resolve);
  });
  return { status, log, output: readFileSync(output, "utf8") };
}

describe("release.yml's bump job against a sandbox", () => {
  it("commits CHANGELOG.md, package.json and package-lock.json at the new version through /sign, signed by the platform", async () => {
    const dir = checkout();
    const head = sandbox.simulator.git.head(REPOSITORY, "main")!;
    const bumped = await runStep(bumpStep("The bumped files"), dir, { VERSION: "0.2.0" });
    expect(bumped.status).toBe(0);
    expect(bumped.log).toContain("- The release workflow.");

    const commitsBefore = sandbox.platform.commits.length;
    const env = { VERSION: "0.2.0", SIGN_SECRET: sandbox.processTriggerSecret, GITHUB_REPOSITORY: REPOSITORY, GITHUB_REF_NAME: "main", GITHUB_SHA: head };
    const signed = await runStep(bumpStep("Commit them through POST /sign"), dir, env);
    expect(signed.status).toBe(0);

    const commit = sandbox.platform.commits.at(-1)!;
    expect(sandbox.platform.commits).toHaveLength(commitsBefore + 1);
    expect(commit).toMatchObject({ repository: REPOSITORY, headline: "chore: release 0.2.0", parents: [head], signedByGitHub: true });
    expect(signed.output).toBe(`oid=${commit.oid}\n`);
    expect(sandbox.simulator.git.head(REPOSITORY, "main")).toBe(commit.oid);

    const files = sandbox.simulator.git.files(REPOSITORY, "main");
    expect(files["CHANGELOG.md"]).toMatch(/^## \[Unreleased\]\n\n## \[0\.2\.0\] - \d{4}-\d{2}-\d{2}\n\n### Added\n\n- The release workflow\.$/m);
    expect(JSON.parse(files["package.json"]!)).toMatchObject({ version: "0.2.0" });
    expect(JSON.parse(files["package-lock.json"]!)).toMatchObject({ version: "0.2.0", packages: { "": { version: "0.2.0" } } });
  });

  it("a head that moved since the run started: /sign refuses (sign_failed), the step fails, nothing is committed", async () => {
    const dir = checkout();
    const stale = sandbox.simulator.git.commit(sandbox.platform.commits.at(-1)!.oid)!.parents[0]!;
    expect((await runStep(bumpStep("The bumped files"), dir, { VERSION: "0.3.0" })).status).toBe(0);
    const commitsBefore = sandbox.platform.commits.length;
    const headBefore = sandbox.simulator.git.head(REPOSITORY, "main");
    const env = { VERSION: "0.3.0", SIGN_SECRET: sandbox.processTriggerSecret, GITHUB_REPOSITORY: REPOSITORY, GITHUB_REF_NAME: "main", GITHUB_SHA: stale };
    const signed = await runStep(bumpStep("Commit them through POST /sign"), dir, env);
    expect(signed.status).not.toBe(0);
    expect(signed.log).toContain('"error":"sign_failed"');
    expect(signed.output).toBe("");
    expect(sandbox.platform.commits).toHaveLength(commitsBefore);
    expect(sandbox.simulator.git.head(REPOSITORY, "main")).toBe(headBefore);
  });

  it("a version that is not X.Y.Z stops at the first step, before anything is sent", async () => {
    const dir = checkout();
    const bumped = await runStep(bumpStep("The bumped files"), dir, { VERSION: "1.0; curl evil" });
    expect(bumped.status).toBe(1);
    expect(bumped.log).toContain("changelog: version must be X.Y.Z");
    expect(readFileSync(join(dir, "CHANGELOG.md"), "utf8")).toBe(CHANGELOG);
  });
});

/** The step's inputs as the runner hands them over: ${{ env.X }} from the workflow, the broker the sandbox's. */
function actionInputs(step: Step, env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(step.with!).map(([name, value]) => {
      if (name === "broker-url") return [name, sandbox.brokerUrl];
      return [name, String(value).replace(/^\$\{\{ env\.(\w+) \}\}$/, (_m, key: string) => env[key]!)];
    }),
  );
}

/** Runs the bundled action with a step's inputs; the mint must carry exactly its permission-* levels. */
async function expectNarrowedMint(step: Step, env: Record<string, string>, wanted: Record<string, string>) {
  const inputs = actionInputs(step, env);
  const asked = Object.fromEntries(Object.entries(inputs).filter(([name]) => name.startsWith("permission-")).map(([name, level]) => [name.slice("permission-".length).replace(/-/g, "_"), level]));
  expect(asked).toEqual(wanted);
  // The example's repositories input (release-two-repositories.yml): each one consents in its own
  // policy, as that file's comment shows, else the step fails with policy_denied.
  const others = (inputs.repositories ?? "").split(",").map((name) => name.trim()).filter((name) => name !== "");
  for (const name of others) {
    await sandbox.setPolicy(`octo-org/${name}`, `rules:\n  - name: releases\n    if: {repository: ${REPOSITORY}, event: push, ref: "refs/tags/v*"}\n    permissions: {contents: write}\n`);
  }
  // Main only: what is checked here is the mint main asked for. Post reads only skip-token-revoke
  // and github-api-url, which none of these steps sets: its revocation is test/action-e2e.test.ts's.
  const run = await sandbox.runAction({ inputs, job: { repository: REPOSITORY, ref: "refs/tags/v0.2.0", workflow: "release" }, env: compileCacheEnv() });
  for (const name of others) await sandbox.setPolicy(`octo-org/${name}`, null);
  expect(run.exitCode).toBe(0);
  expect(sandbox.platform.mints.at(-1)).toMatchObject({ repositories: [REPOSITORY.split("/")[1], ...others], permissions: wanted });
  expect(run.outputs.repositories).toBe([REPOSITORY, ...others.map((name) => `octo-org/${name}`)].join(","));
  expect(JSON.parse(run.outputs.permissions!)).toEqual(wanted);
}

const actionStepsOf = (file: string, uses: RegExp) => {
  const parsed = parse(readFileSync(new URL(file, root), "utf8")) as Workflow;
  return Object.entries(parsed.jobs).flatMap(([job, { steps }]) => steps.filter((step) => uses.test(step.uses ?? "")).map((step) => ({ job, step, env: parsed.env ?? {} })));
};

describe("the tokensmith steps get exactly the permissions they ask for, from a broker that grants more", () => {
  it.each([
    [".github/workflows/release.yml", "bump", { contents: "write" }],
    [".github/workflows/release.yml", "github-release", { contents: "write", workflows: "write" }],
    ["examples/workflows/tag-release.yml", "release", { contents: "write" }],
    ["examples/workflows/pull-request-read-only.yml", "files", { contents: "read", pull_requests: "read" }],
    ["examples/workflows/release-two-repositories.yml", "release", { contents: "write" }],
  ])("%s, job %s: %j", async (file, job, wanted) => {
    const steps = actionStepsOf(file, file.startsWith("examples/") ? /^your-org\/tokensmith@/ : /^\.\/$/);
    const step = steps.find((candidate) => candidate.job === job);
    expect(steps.filter((candidate) => candidate.job === job)).toHaveLength(1);
    await expectNarrowedMint(step!.step, step!.env, wanted);
  });

  it("every tokensmith step of those files is one of the above", () => {
    const all = [
      ...actionStepsOf(".github/workflows/release.yml", /^\.\/$/),
      ...["tag-release", "pull-request-read-only", "release-two-repositories"].flatMap((name) => actionStepsOf(`examples/workflows/${name}.yml`, /^your-org\/tokensmith@/)),
    ];
    expect(all.map(({ job }) => job)).toEqual(["bump", "github-release", "release", "files", "release"]);
  });
});
