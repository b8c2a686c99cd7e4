// Runs the bundled action (dist/main/index.js, dist/post/index.js) in a child process the way the
// Actions runner does: inputs as INPUT_<NAME> variables (upper-cased, hyphens kept) with action.yml's
// defaults filled in, GITHUB_OUTPUT / GITHUB_STATE files read back in the runner's file-command
// format, and the saved state handed to post as STATE_<name> variables.
// https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/workflow-commands-for-github-actions
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const ACTION_YML = join(ROOT, "action.yml");

export interface StepOptions {
  inputs?: Record<string, string>;
  /** The job's variables (GITHUB_REPOSITORY, ACTIONS_ID_TOKEN_REQUEST_URL, ...). */
  env?: Record<string, string | undefined>;
  /** What main saved (post only). */
  state?: Record<string, string>;
  /** The node binary to run the step with (default: this process's, process.execPath). */
  node?: string;
  /** A command the step runs under, e.g. ["ip", "netns", "exec", "ns"]. */
  prefix?: string[];
  /**
   * Kill the child (SIGKILL) if it has not exited after this long: a step that does not end is a
   * result (`killed: true`), not a test that hangs. Default 60 s.
   */
  killAfterMs?: number;
}

export interface StepResult {
  exitCode: number | null;
  /** True when the child was still running after killAfterMs and was killed. */
  killed: boolean;
  /** stdout then stderr, line by line: what the runner reads for workflow commands and the log. */
  lines: string[];
  outputs: Record<string, string>;
  state: Record<string, string>;
}

export async function runStep(step: "main" | "post", options: StepOptions = {}): Promise<StepResult> {
  const dir = mkdtempSync(join(tmpdir(), "tokensmith-step-"));
  const outputFile = join(dir, "output");
  const stateFile = join(dir, "state");
  writeFileSync(outputFile, "");
  writeFileSync(stateFile, "");
  const inputs = { ...actionInputDefaults(), ...options.inputs };
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", GITHUB_OUTPUT: outputFile, GITHUB_STATE: stateFile, RUNNER_TEMP: dir };
  for (const [name, value] of Object.entries(inputs)) env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] = value;
  for (const [name, value] of Object.entries(options.state ?? {})) env[`STATE_${name}`] = value;
  for (const [name, value] of Object.entries(options.env ?? {})) if (value !== undefined) env[name] = value;

  try {
    const [command, ...args] = [...(options.prefix ?? []), options.node ?? process.execPath, join(ROOT, "dist", step, "index.js")];
    const child = spawn(command!, args, { env, cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let killed = false;
    const killer = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, options.killAfterMs ?? 60_000);
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", (code) => resolve(code));
    }).finally(() => clearTimeout(killer));
    const lines = `${stdout}${stderr}`.split(/\r?\n/).filter((line) => line !== "");
    return { exitCode, killed, lines, outputs: parseFileCommands(readFileSync(outputFile, "utf8")), state: parseFileCommands(readFileSync(stateFile, "utf8")) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `name<<DELIMITER` … `DELIMITER` blocks, and the one-line `name=value` form. */
export function parseFileCommands(text: string): Record<string, string> {
  const result: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === "") continue;
    const heredoc = /^([^=]+?)<<(.+)$/.exec(line);
    if (heredoc) {
      const [, name, delimiter] = heredoc as unknown as [string, string, string];
      const value: string[] = [];
      for (i++; i < lines.length && lines[i] !== delimiter; i++) value.push(lines[i]!);
      if (i >= lines.length) throw new Error(`file command ${name}: no closing delimiter`);
      result[name] = value.join("\n");
      continue;
    }
    const eq = line.indexOf("=");
    if (eq <= 0) throw new Error(`not a file command: ${line}`);
    result[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return result;
}

export interface ActionInput {
  name: string;
  required: boolean;
  default?: string;
}

/** The `inputs:` of action.yml (the flat two-level shape this action uses). */
export function actionInputs(text = readFileSync(ACTION_YML, "utf8")): ActionInput[] {
  const block = /^inputs:\n((?:[ ]{2,}.*\n|\n)*)/m.exec(text)?.[1] ?? "";
  const inputs: ActionInput[] = [];
  for (const line of block.split("\n")) {
    const name = /^ {2}([a-z][a-z0-9-]*):\s*$/.exec(line)?.[1];
    if (name) {
      inputs.push({ name, required: false });
      continue;
    }
    const field = /^ {4}(required|default):\s*(.*)$/.exec(line);
    const current = inputs[inputs.length - 1];
    if (!field || !current) continue;
    const value = field[2]!.trim().replace(/^"(.*)"$/, "$1").replace(/^'(.*)'$/, "$1");
    if (field[1] === "required") current.required = value === "true";
    else current.default = value;
  }
  return inputs;
}

/** What the runner sets for inputs the workflow does not give. */
function actionInputDefaults(): Record<string, string> {
  return Object.fromEntries(actionInputs().flatMap((input) => (input.default === undefined ? [] : [[input.name, input.default]])));
}
