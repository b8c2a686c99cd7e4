// Runs one job of a workflow file against a sandbox the way the Actions runner would run it, step
// by step, so a shipped example is tested as it runs and not only linted:
// - `uses: actions/checkout@…` → a checkout stand-in: `git init` and one commit of the repository's
//   default-branch files from the simulator's git model, into the workspace (or `with.path`), with
//   `origin` at http://github.localhost/<owner>/<repo> as a real checkout's is at github.com (so gh
//   finds the repository from it) and a local tag when the job runs for a tag. Nothing serves git
//   there: a `git push` fails.
// - `uses:` the tokensmith action (`your-org/tokensmith@…` of the examples, or `./`) → the sandbox's
//   `runAction` with the step's `with:` (its broker-url replaced by the sandbox's), outputs exposed as
//   `steps.<id>.outputs.*`. Its post step (revocation) is not run.
// - `run:` → bash as the runner runs it (`bash --noprofile --norc -eo pipefail`), in the workspace
//   or `working-directory`, with the runner's GITHUB_* variables and the step's `env:`; the real
//   GitHub CLI answers from the simulator (test/support/gh-to-simulator.ts).
// `${{ … }}` takes a context path (`github.*`, `steps.*.outputs.*`, `secrets.*`, `env.*`), a
// 'string', or `a == b` / `a != b` of those. Anything else — another action, another expression, a
// path the context does not have — throws, so an example that grows a feature this runner does not
// model fails its test instead of passing on a guess.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parse } from "yaml";
import type { JobClaims, Sandbox } from "../../server/sandbox/index.js";
import { parseFileCommands } from "../../server/sandbox/run-bundled-action.js";
import { compileCacheEnv } from "./action-runner.js";
import { GH_HOST, type GhProxy } from "./gh-to-simulator.js";

interface Step {
  id?: string;
  name?: string;
  if?: string;
  uses?: string;
  with?: Record<string, unknown>;
  run?: string;
  env?: Record<string, unknown>;
  "working-directory"?: string;
}
interface Job {
  if?: string;
  env?: Record<string, unknown>;
  steps: Step[];
}
export interface Workflow {
  env?: Record<string, unknown>;
  jobs: Record<string, Job>;
}

export interface JobContext {
  /** `github.*`: repository, repository_owner, ref, ref_name, sha, event_name, event, … */
  github: Record<string, unknown>;
  secrets?: Record<string, string>;
  /** The job's OIDC claims for the tokensmith step (repository and ref default to github.*). */
  claims?: JobClaims;
}

export interface StepResult {
  label: string;
  kind: "checkout" | "tokensmith" | "run";
  exitCode: number | null;
  log: string[];
}

export interface JobRun {
  /** False when the job's `if:` was false: no step ran. */
  ran: boolean;
  /** The steps that ran, in order; the last one failed when `ok` is false. */
  steps: StepResult[];
  ok: boolean;
  workspace: string;
  outputs: Record<string, Record<string, string>>;
  /** Removes the workspace. */
  dispose(): void;
}

const TOKENSMITH_ACTION = /^(your-org\/tokensmith@|\.\/?$)/;
const CHECKOUT_ACTION = /^actions\/checkout@/;

export function readWorkflow(text: string): Workflow {
  return parse(text) as Workflow;
}

export async function runJob(sandbox: Sandbox, gh: GhProxy, workflow: Workflow, jobName: string, context: JobContext): Promise<JobRun> {
  const job = workflow.jobs[jobName];
  if (!job) throw new Error(`workflow-job: no job ${jobName}`);
  const root = mkdtempSync(join(tmpdir(), "tokensmith-job-"));
  try {
    return await steps(sandbox, gh, workflow, job, context, root);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

async function steps(sandbox: Sandbox, gh: GhProxy, workflow: Workflow, job: Job, context: JobContext, root: string): Promise<JobRun> {
  const workspace = join(root, "workspace");
  const home = join(root, "home");
  mkdirSync(workspace);
  mkdirSync(home);
  const outputs: Record<string, Record<string, string>> = {};
  const github: Record<string, unknown> = { ...context.github, workspace };
  const env: Record<string, string> = {};
  const scope = () => ({ github, steps: Object.fromEntries(Object.entries(outputs).map(([id, values]) => [id, { outputs: values }])), secrets: context.secrets ?? {}, env });
  const evaluate = (text: string) => substitute(text, scope());
  const dispose = () => rmSync(root, { recursive: true, force: true });

  const run: JobRun = { ran: false, steps: [], ok: true, workspace, outputs, dispose };
  if (job.if !== undefined && !truthy(evaluateExpression(stripBraces(job.if), scope()))) return run;
  run.ran = true;
  for (const [name, value] of Object.entries({ ...workflow.env, ...job.env })) env[name] = evaluate(String(value));

  for (const [index, step] of job.steps.entries()) {
    const label = step.name ?? step.id ?? step.uses ?? `step ${index + 1}`;
    if (step.if !== undefined) throw new Error(`workflow-job: step ${label}: a step's if: is not modelled`);
    const withs = Object.fromEntries(Object.entries(step.with ?? {}).map(([key, value]) => [key, evaluate(String(value))]));
    let result: StepResult;
    if (step.uses && CHECKOUT_ACTION.test(step.uses)) {
      result = { label, kind: "checkout", ...(await checkout(sandbox, github, workspace, withs)) };
    } else if (step.uses && TOKENSMITH_ACTION.test(step.uses)) {
      const claims: JobClaims = { repository: String(github.repository), ref: String(github.ref), ...context.claims };
      const action = await sandbox.runAction({ inputs: { ...withs, ...(withs["broker-url"] !== undefined ? { "broker-url": sandbox.brokerUrl } : {}) }, job: claims, env: compileCacheEnv() });
      if (step.id) outputs[step.id] = Object.fromEntries(Object.entries(action.outputs).filter((entry): entry is [string, string] => entry[1] !== undefined));
      result = { label, kind: "tokensmith", exitCode: action.exitCode, log: action.log };
    } else if (step.uses) {
      throw new Error(`workflow-job: step ${label}: uses: ${step.uses} is not modelled`);
    } else if (step.run !== undefined) {
      const stepEnv = Object.fromEntries(Object.entries(step.env ?? {}).map(([key, value]) => [key, evaluate(String(value))]));
      const cwd = join(workspace, step["working-directory"] ? evaluate(step["working-directory"]) : "");
      const shell = await runShell(evaluate(step.run), cwd, { ...runnerEnv(github, root, home, gh), ...env, ...stepEnv });
      if (step.id) outputs[step.id] = shell.outputs;
      result = { label, kind: "run", exitCode: shell.exitCode, log: shell.log };
    } else {
      throw new Error(`workflow-job: step ${label}: neither uses: nor run:`);
    }
    run.steps.push(result);
    if (result.exitCode !== 0) {
      run.ok = false;
      break;
    }
  }
  return run;
}

/** The variables the runner gives every step (the ones the examples use, and gh's way to the simulator). */
function runnerEnv(github: Record<string, unknown>, root: string, home: string, gh: GhProxy): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    HOME: home,
    CI: "true",
    GITHUB_ACTIONS: "true",
    GITHUB_REPOSITORY: String(github.repository),
    GITHUB_REPOSITORY_OWNER: String(github.repository_owner),
    GITHUB_REF: String(github.ref),
    GITHUB_REF_NAME: String(github.ref_name),
    GITHUB_SHA: String(github.sha),
    GITHUB_EVENT_NAME: String(github.event_name),
    GITHUB_WORKSPACE: String(github.workspace),
    GITHUB_SERVER_URL: `http://${GH_HOST}`,
    RUNNER_TEMP: root,
    GH_CONFIG_DIR: join(home, ".config", "gh"),
    ...gh.env,
  };
}

async function checkout(sandbox: Sandbox, github: Record<string, unknown>, workspace: string, withs: Record<string, string>): Promise<{ exitCode: number; log: string[] }> {
  const repository = withs.repository || String(github.repository);
  const own = repository.toLowerCase() === String(github.repository).toLowerCase();
  const ref = withs.ref || (own ? String(github.ref) : "refs/heads/main");
  const tag = ref.startsWith("refs/tags/") ? ref.slice("refs/tags/".length) : undefined;
  const branch = ref.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : "main";
  const files = sandbox.simulator.git.files(repository, branch);
  const dir = join(workspace, withs.path ?? "");
  mkdirSync(dir, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  // The stand-in's own commit needs an identity; the steps after it see none (as on a runner).
  const identity = { GIT_AUTHOR_NAME: "checkout", GIT_AUTHOR_EMAIL: "checkout@localhost", GIT_COMMITTER_NAME: "checkout", GIT_COMMITTER_EMAIL: "checkout@localhost" };
  const script = [
    `git init -q -b ${JSON.stringify(branch)}`,
    "git add -A",
    `git commit -q -m ${JSON.stringify(`checkout of ${repository} ${ref}`)}`,
    `git remote add origin ${JSON.stringify(`http://${GH_HOST}/${repository}`)}`,
    ...(tag ? [`git tag ${JSON.stringify(tag)}`] : []),
  ].join("\n");
  const shell = await runShell(script, dir, { PATH: process.env.PATH ?? "", HOME: dir, ...identity });
  return { exitCode: shell.exitCode ?? 1, log: [`checkout stand-in: ${repository} at ${ref} (${Object.keys(files).length} files)`, ...shell.log] };
}

async function runShell(script: string, cwd: string, env: Record<string, string>): Promise<{ exitCode: number | null; log: string[]; outputs: Record<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), "tokensmith-run-"));
  try {
    const file = join(dir, "step.sh");
    const outputFile = join(dir, "output");
    writeFileSync(file, script);
    writeFileSync(outputFile, "");
    // Async on purpose: the gh proxy and the simulator answer from this process's event loop.
    const child = spawn("bash", ["--noprofile", "--norc", "-eo", "pipefail", file], { cwd, env: { ...env, GITHUB_OUTPUT: outputFile }, stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", resolve);
    }).finally(() => clearTimeout(killer));
    return { exitCode, log: text.split(/\r?\n/).filter((line) => line !== ""), outputs: parseFileCommands(readFileSync(outputFile, "utf8")) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function stripBraces(text: string): string {
  const match = /^\s*\$\{\{([\s\S]*)\}\}\s*$/.exec(text);
  return match ? match[1]! : text;
}

/** Replaces each `${{ … }}` in `text` with its value. */
export function substitute(text: string, scope: Record<string, unknown>): string {
  return text.replace(/\$\{\{([\s\S]*?)\}\}/g, (_whole, expression: string) => String(evaluateExpression(expression, scope)));
}

export function evaluateExpression(expression: string, scope: Record<string, unknown>): unknown {
  const text = expression.trim();
  const comparison = /^(.+?)\s*(==|!=)\s*(.+)$/.exec(text);
  if (comparison) {
    const [, left, operator, right] = comparison as unknown as [string, string, string, string];
    const equal = String(operand(left, scope)).toLowerCase() === String(operand(right, scope)).toLowerCase();
    return operator === "==" ? equal : !equal;
  }
  return operand(text, scope);
}

function operand(text: string, scope: Record<string, unknown>): unknown {
  const token = text.trim();
  const literal = /^'((?:[^']|'')*)'$/.exec(token);
  if (literal) return literal[1]!.replace(/''/g, "'");
  if (!/^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$/.test(token)) throw new Error(`workflow-job: the expression ${JSON.stringify(token)} is not modelled`);
  let value: unknown = scope;
  for (const key of token.split(".")) {
    if (value === null || typeof value !== "object" || !(key in value)) throw new Error(`workflow-job: ${token}: the job's context has no ${key}`);
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function truthy(value: unknown): boolean {
  return value !== false && value !== "" && value !== 0 && value !== null && value !== undefined;
}
