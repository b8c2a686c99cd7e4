// Every shipped example workflow (examples/workflows/*.yml) and the README's workflow, run as a
// runner would run them against a sandbox (test/support/workflow-job.ts): a checkout stand-in, the
// bundled action against the sandbox's broker, and each `run:` step in bash with the real GitHub CLI
// answered by the simulator (test/support/gh-to-simulator.ts). Each case asserts what the job did to
// the platform (the release, the website's commit, the files listed), not only exit codes. A gh call
// the simulator does not model answers 501 and fails the step: a new example using one fails here.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startSandbox, type Sandbox } from "../server/sandbox/index.js";
import { startGhProxy, type GhProxy } from "./support/gh-to-simulator.js";
import { keepLogs } from "./support/log-sink.js";
import { readWorkflow, runJob, type JobContext, type JobRun, type Workflow } from "./support/workflow-job.js";

const ROOT = new URL("../", import.meta.url);
const APP = "octo-org/app";
const WEBSITE = "octo-org/website";

let sandbox: Sandbox;
let gh: GhProxy;
const runs: JobRun[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    world: {
      organisation: "octo-org",
      permissions: { contents: "write", pull_requests: "write", metadata: "read" },
      repositories: [
        { name: "app", branches: { main: { "README.md": "# app\n" } }, releases: [{ tag: "v1.1.0" }], pullRequests: [{ base: "main", title: "feat: dark mode" }] },
        { name: "website", branches: { main: { "index.html": "<h1>app</h1>\n", LATEST_RELEASE: "v1.1.0\n" } } },
      ],
    },
  });
  gh = await startGhProxy(sandbox.simulator.apiBase);
}, 60_000);

afterAll(async () => {
  for (const run of runs) run.dispose();
  await gh?.close();
  // The broker's lines go to the suite's scan for tokens, JWTs and keys (test/support/log-scan.ts).
  if (sandbox) keepLogs(sandbox.logs);
  await sandbox?.close();
});

const workflowAt = (path: string): Workflow => readWorkflow(readFileSync(new URL(path, ROOT), "utf8"));

/** The README's workflow: its yaml block that starts with `# .github/workflows/release.yml`. */
function readmeWorkflow(): Workflow {
  const readme = readFileSync(new URL("README.md", ROOT), "utf8");
  const block = /```yaml\n(# \.github\/workflows\/release\.yml\n[\s\S]*?)```/.exec(readme);
  if (!block) throw new Error("README.md has no yaml block starting with # .github/workflows/release.yml");
  return readWorkflow(block[1]!);
}

/** A REST call with a token, as a job's step would make it. */
async function api(token: string, path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const answer = await fetch(`${sandbox.simulator.apiBase}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } });
  return { status: answer.status, body: await answer.json() };
}

/**
 * A token of the App's for `repository` (a setup step of the test, not of the job): asked of the
 * broker's POST /token directly, with a job's OIDC token for that repository. The jobs' own
 * tokensmith steps run the bundled action; this one is only a means to call the API.
 */
async function setupToken(repository: string): Promise<string> {
  const [owner, repo] = repository.split("/");
  const oidcToken = await sandbox.mintJobToken({ repository, ref: "refs/heads/main" });
  const answer = await fetch(`${sandbox.brokerUrl}/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ oidcToken, owner, repo, permissions: { contents: "write" } }),
  });
  const body = (await answer.json()) as { token?: string };
  if (answer.status !== 200 || !body.token) throw new Error(`setup token for ${repository}: HTTP ${answer.status} ${JSON.stringify(body)}`);
  return body.token;
}

/** What triggers a tag job: the tag pushed to the platform, at main's head. */
async function pushTag(repository: string, tag: string): Promise<string> {
  const sha = sandbox.simulator.git.head(repository, "main")!;
  const created = await api(await setupToken(repository), `/repos/${repository}/git/refs`, { method: "POST", body: JSON.stringify({ ref: `refs/tags/${tag}`, sha }) });
  expect(created.status).toBe(201);
  return sha;
}

function tagJob(tag: string, sha: string, workflow: string): JobContext {
  return {
    github: { repository: APP, repository_owner: "octo-org", ref: `refs/tags/${tag}`, ref_name: tag, sha, event_name: "push", event: {} },
    claims: { workflow, event_name: "push" },
  };
}

async function run(workflow: Workflow, job: string, context: JobContext): Promise<JobRun> {
  const result = await runJob(sandbox, gh, workflow, job, context);
  runs.push(result);
  return result;
}

/** A workflow of one job, `other`, with these steps. */
const oneJob = (steps: Workflow["jobs"][string]["steps"]): Workflow => ({ jobs: { other: { steps } } });

const logOf = (result: JobRun) => result.steps.map((step) => `--- ${step.label} (${step.exitCode})\n${step.log.join("\n")}`).join("\n");

/** The job passed; else its steps' logs, as the runner would show them. */
function expectOk(result: JobRun): void {
  if (!result.ran || !result.ok) throw new Error(`the job failed:\n${logOf(result)}`);
}

async function releaseOf(repository: string, tag: string): Promise<{ status: number; body: any }> {
  return api(await setupToken(repository), `/repos/${repository}/releases/tags/${tag}`);
}

/** The git identity the "Commit as the App" step set in the checkout, and the one it should be. */
async function expectBotIdentity(result: JobRun): Promise<void> {
  const slug = result.outputs["app-token"]!["app-slug"]!;
  const bot = await api(result.outputs["app-token"]!.token!, `/users/${encodeURIComponent(`${slug}[bot]`)}`);
  expect(bot.status).toBe(200);
  const config = (key: string) => execFileSync("git", ["config", key], { cwd: result.workspace, encoding: "utf8" }).trim();
  expect(config("user.name")).toBe(`${slug}[bot]`);
  expect(config("user.email")).toBe(`${bot.body.id}+${slug}[bot]@users.noreply.github.com`);
}

const CASES = ["tag-release.yml", "release-two-repositories.yml", "pull-request-read-only.yml"];

describe("the example workflows, run against the sandbox", () => {
  it("every file in examples/workflows has a case here", () => {
    expect(readdirSync(new URL("examples/workflows/", ROOT)).filter((name) => name.endsWith(".yml")).sort()).toEqual([...CASES].sort());
  });

  it("tag-release.yml: checks out, sets the bot's identity, publishes the release for the pushed tag", async () => {
    const sha = await pushTag(APP, "v1.2.0");
    const result = await run(workflowAt("examples/workflows/tag-release.yml"), "release", tagJob("v1.2.0", sha, "tag-release"));
    expectOk(result);
    expect(result.steps.map((step) => step.kind)).toEqual(["tokensmith", "checkout", "run", "run"]);
    const release = await releaseOf(APP, "v1.2.0");
    expect(release.status).toBe(200);
    expect(release.body).toMatchObject({ tag_name: "v1.2.0", draft: false, target_commitish: expect.any(String) });
    await expectBotIdentity(result);
  }, 120_000);

  it("release-two-repositories.yml: the release in the job's repository, LATEST_RELEASE in the website, one token for both", async () => {
    const workflow = workflowAt("examples/workflows/release-two-repositories.yml");
    // The website's consent, exactly as the file's comment shows it (your-org is octo-org here).
    const text = readFileSync(new URL("examples/workflows/release-two-repositories.yml", ROOT), "utf8");
    const policy = /#\s*\n((?:#   .*\n)+)/.exec(text)![1]!.replace(/^# {3}/gm, "").replace(/your-org\//g, "octo-org/");
    expect(policy).toContain("rules:");
    await sandbox.setPolicy(WEBSITE, policy);
    const before = sandbox.simulator.git.head(WEBSITE, "main");
    const sha = await pushTag(APP, "v1.3.0");
    const result = await run(workflow, "release", tagJob("v1.3.0", sha, "release-two-repositories"));
    expectOk(result);
    expect(sandbox.platform.mints.at(-1)?.repositories).toEqual(["app", "website"]);
    expect((await releaseOf(APP, "v1.3.0")).body).toMatchObject({ tag_name: "v1.3.0", draft: false });
    // The website moved by one commit, made by the App through the contents API and signed.
    const head = sandbox.simulator.git.head(WEBSITE, "main")!;
    const commit = sandbox.simulator.git.commit(head)!;
    expect(commit.parents).toEqual([before]);
    expect(commit).toMatchObject({ headline: "Release v1.3.0", signedByGitHub: true, author: { name: `${result.outputs["app-token"]!["app-slug"]}[bot]` } });
    expect(sandbox.simulator.git.files(WEBSITE, "main").LATEST_RELEASE).toBe("v1.3.0\n");
    expect(result.steps.at(-1)!.log).toEqual([head]);
  }, 120_000);

  it("release-two-repositories.yml: the website's file is created when it is not there yet", async () => {
    sandbox.simulator.git.setFile(WEBSITE, "LATEST_RELEASE", null);
    const sha = await pushTag(APP, "v1.3.1");
    const result = await run(workflowAt("examples/workflows/release-two-repositories.yml"), "release", tagJob("v1.3.1", sha, "release-two-repositories"));
    expectOk(result);
    expect(sandbox.simulator.git.files(WEBSITE, "main").LATEST_RELEASE).toBe("v1.3.1\n");
  }, 120_000);

  it("the runner catches the shipped bug: gh release create without --repo and without a checkout fails", async () => {
    // The example as it shipped before: no checkout, no --repo.
    const workflow = workflowAt("examples/workflows/release-two-repositories.yml");
    const publish = workflow.jobs.release!.steps.find((step) => step.name === "Publish the release")!;
    publish.run = publish.run!.replace(' --repo "$GITHUB_REPOSITORY"', "");
    const sha = await pushTag(APP, "v1.3.2");
    const result = await run(workflow, "release", tagJob("v1.3.2", sha, "release-two-repositories"));
    expect(result.ok).toBe(false);
    expect(result.steps.at(-1)!.label).toBe("Publish the release");
    expect(result.steps.at(-1)!.log.join("\n")).toMatch(/not a git repository/);
    expect((await releaseOf(APP, "v1.3.2")).status).toBe(404);
  }, 120_000);

  it("pull-request-read-only.yml: lists the pull request's files with a read-only token", async () => {
    const number = 1;
    const pull = sandbox.simulator.git.pullRequest(APP, number);
    sandbox.simulator.git.push(APP, pull.head, { files: { "src/dark-mode.css": "body { background: black; }\n" } });
    const context: JobContext = {
      github: {
        repository: APP, repository_owner: "octo-org", ref: `refs/pull/${number}/merge`, ref_name: `${number}/merge`, sha: pull.headSha, event_name: "pull_request",
        event: { pull_request: { number, head: { repo: { full_name: APP } } } },
      },
      claims: { workflow: "pull request", event_name: "pull_request" },
    };
    const result = await run(workflowAt("examples/workflows/pull-request-read-only.yml"), "files", context);
    expectOk(result);
    expect(JSON.parse(result.outputs["app-token"]!.permissions!)).toEqual({ contents: "read", pull_requests: "read" });
    expect(result.steps.at(-1)!.log.at(-1)).toBe("src/dark-mode.css");
    expect(gh.requests).toContain(`GET /repos/${APP}/pulls/${number}/files`);
  }, 120_000);

  it("pull-request-read-only.yml: a fork's pull request does not run the job", async () => {
    const context: JobContext = {
      github: { repository: APP, repository_owner: "octo-org", ref: "refs/pull/1/merge", ref_name: "1/merge", sha: "0".repeat(40), event_name: "pull_request", event: { pull_request: { number: 1, head: { repo: { full_name: "someone/app" } } } } },
    };
    const result = await run(workflowAt("examples/workflows/pull-request-read-only.yml"), "files", context);
    expect(result).toMatchObject({ ran: false, steps: [] });
  });

  it("README.md's workflow: publishes the release as the App, with the bot's identity set", async () => {
    const sha = await pushTag(APP, "v1.4.0");
    const result = await run(readmeWorkflow(), "release", tagJob("v1.4.0", sha, "release"));
    expectOk(result);
    expect(result.steps.at(-1)!.log[0]).toBe(`App token for ${APP}, valid until ${result.outputs["app-token"]!["expires-at"]}`);
    expect((await releaseOf(APP, "v1.4.0")).body).toMatchObject({ tag_name: "v1.4.0", draft: false });
    await expectBotIdentity(result);
  }, 120_000);

  it("a gh call the simulator does not model fails the step (501), it does not pass by accident", async () => {
    const workflow = oneJob([
      { id: "app-token", uses: "your-org/tokensmith@v1", with: { "auth-mode": "public-app", "broker-url": "https://tokensmith.example.com" } },
      { env: { GH_TOKEN: "${{ steps.app-token.outputs.token }}" }, run: 'gh api "repos/$GITHUB_REPOSITORY/environments"' },
    ]);
    const result = await run(workflow, "other", tagJob("v1.1.0", sandbox.simulator.git.head(APP, "main")!, "release"));
    expect(result.ok).toBe(false);
    expect(result.steps.at(-1)!.log.join("\n")).toMatch(/not implemented|HTTP 501/);
  }, 120_000);

  it("an expression the runner does not model throws instead of guessing", async () => {
    const workflow = oneJob([{ run: "echo \"${{ format('{0}', github.ref) }}\"" }]);
    await expect(runJob(sandbox, gh, workflow, "other", tagJob("v1.1.0", "0".repeat(40), "release"))).rejects.toThrow(/not modelled/);
  });
});
