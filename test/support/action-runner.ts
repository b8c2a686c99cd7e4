// Runs the bundled action (dist/main/index.js, dist/post/index.js) in a child process the way the
// Actions runner does, through the sandbox's runner (server/sandbox/run-bundled-action.ts: INPUT_*
// variables, GITHUB_OUTPUT / GITHUB_STATE file commands, STATE_* for post), with action.yml's
// defaults read from this checkout's action.yml.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runBundledStep, type StepOptions } from "../../server/sandbox/run-bundled-action.js";

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
 * brokers spawn-broker.ts starts: the bundle is 1.2 MB, and compiling it is about a sixth of a
 * step's CPU on Node 24 (docs/development.md#test-time). A cache only: the step runs the same code.
 */
export function compileCacheEnv(): Record<string, string> {
  return process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {};
}

/** The sandbox's runner (the product's own), with every default of this checkout's action.yml filled in. */
export async function runStep(step: "main" | "post", options: StepOptions = {}): Promise<StepResult> {
  const { log, ...run } = await runBundledStep(step, { ...options, inputs: { ...actionInputDefaults(), ...options.inputs }, env: { ...compileCacheEnv(), ...options.env } });
  return { ...run, lines: log };
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
