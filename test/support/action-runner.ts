// Runs the bundled action (dist/main/index.js, dist/post/index.js) in a child process the way the
// Actions runner does, through the sandbox's runner (server/sandbox/run-bundled-action.ts: INPUT_*
// variables, GITHUB_OUTPUT / GITHUB_STATE file commands, STATE_* for post), with action.yml's
// defaults read from this checkout's action.yml; or, for the cases of a group whose process path
// another case covers, the same main step in this process (runMainInProcess).
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseFileCommands, runBundledStep, stepEnvironment, type StepOptions } from "../../server/sandbox/run-bundled-action.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const ACTION_YML = join(ROOT, "action.yml");

export type { StepOptions };
export { parseFileCommands } from "../../server/sandbox/run-bundled-action.js";

export interface StepResult {
  exitCode: number | null;
  /** True when the child was still running after killAfterMs and was killed. */
  killed: boolean;
  /** stdout then stderr, line by line: what the runner reads for workflow commands and the log. */
  lines: string[];
  outputs: Record<string, string>;
  state: Record<string, string>;
}

/**
 * The run's Node compile cache (test/support/global-setup.ts), for a step's child process as for the
 * brokers spawn-broker.ts starts: the bundle is 1.2 MB, and the cache saves about 15 ms of a step's
 * ~125 ms of CPU on Node 24 (docs/development.md#test-time). A cache only: the step runs the same code.
 */
export function compileCacheEnv(): Record<string, string> {
  return process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {};
}

/** The sandbox's runner (the product's own), with every default of this checkout's action.yml filled in. */
export async function runStep(step: "main" | "post", options: StepOptions = {}): Promise<StepResult> {
  const { log, ...run } = await runBundledStep(step, { ...options, inputs: { ...actionInputDefaults(), ...options.inputs }, env: { ...compileCacheEnv(), ...options.env } });
  return { ...run, lines: log };
}

/**
 * The main step run in this process, for the cases of a group that differ from the group's first
 * only in what a pure check of the action decides (an input's value, an answer's field): the first
 * runs dist/ in a child process with runStep, the others run the same step, action/main-step.ts
 * (dist/main is its bundle), with the real @actions/core, against the same real servers, and are
 * read the same way: the lines written to stdout, the GITHUB_OUTPUT / GITHUB_STATE files, the exit
 * code. The environment is the child's (PATH, the files, the inputs with action.yml's defaults, the
 * job's variables) for the duration of the step, then this process's again. About 120 ms of CPU
 * less per case (a Node 24 process loading the 1.2 MB bundle).
 */
export async function runMainInProcess(options: Pick<StepOptions, "inputs" | "env"> = {}): Promise<StepResult> {
  // Loaded on first use: most files that import this module never run a step in process.
  // One after the other: jest's linker fails concurrent dynamic imports that share a dependency
  // (docs/development.md#test-time).
  const core = await import("@actions/core");
  const { mainStep } = await import("../../action/main-step.js");
  const { dir, outputFile, stateFile, env } = stepEnvironment(options.inputs ?? {}, actionInputDefaults());
  for (const [name, value] of Object.entries(options.env ?? {})) if (value !== undefined) env[name] = value;

  const saved = { ...process.env };
  const replaceEnv = (values: Record<string, string | undefined>) => {
    for (const name of Object.keys(process.env)) delete process.env[name];
    Object.assign(process.env, values);
  };
  const savedExitCode = process.exitCode;
  const write = process.stdout.write;
  let stdout = "";
  try {
    replaceEnv(env);
    process.exitCode = undefined;
    process.stdout.write = ((chunk: string | Uint8Array) => {
      stdout += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
      return true;
    }) as typeof process.stdout.write;
    let exitCode: number;
    try {
      await mainStep(core, process.env);
      exitCode = Number(process.exitCode ?? 0);
    } finally {
      process.stdout.write = write;
      process.exitCode = savedExitCode;
      replaceEnv(saved);
    }
    const lines = stdout.split(/\r?\n/).filter((line) => line !== "");
    return { exitCode, killed: false, lines, outputs: parseFileCommands(readFileSync(outputFile, "utf8")), state: parseFileCommands(readFileSync(stateFile, "utf8")) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
export function actionInputDefaults(): Record<string, string> {
  return Object.fromEntries(actionInputs().flatMap((input) => (input.default === undefined ? [] : [[input.name, input.default]])));
}
