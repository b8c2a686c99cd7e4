// Runs the bundled action (dist/main/index.js, dist/post/index.js) in a child process the way the
// Actions runner does: inputs as INPUT_<NAME>, GITHUB_OUTPUT / GITHUB_STATE files read back in the
// runner's file-command format, saved state handed to post as STATE_<name>.
// https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/workflow-commands-for-github-actions
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package root: build/server/sandbox/ → ../../../ (and server/sandbox/ → ../../ under jest, which runs the sources). */
function packageRoot(): string {
  const here = fileURLToPath(new URL(".", import.meta.url));
  return join(here, here.includes(`${join("build", "server")}`) ? "../../../" : "../../");
}

/** action.yml's defaults, as the runner fills them in for inputs a workflow does not give (test/action-metadata.test.ts holds them to action.yml). */
export const ACTION_INPUT_DEFAULTS: Readonly<Record<string, string>> = { "broker-fallback-url": "", "oidc-audience": "tokensmith", "skip-token-revoke": "false", "timeout-seconds": "90", "policy-rule": "", repositories: "", "github-api-url": "" };

interface StepRun {
  exitCode: number | null;
  /** True when the step was still running after `killAfterMs` and was killed (SIGKILL). */
  killed: boolean;
  /** stdout then stderr, line by line: what the runner shows in the job's log. */
  log: string[];
  outputs: Record<string, string>;
  state: Record<string, string>;
}

export interface StepOptions {
  inputs?: Record<string, string>;
  /** The job's variables (GITHUB_REPOSITORY, ACTIONS_ID_TOKEN_REQUEST_URL, ...); undefined ones are left out. */
  env?: Record<string, string | undefined>;
  /** What main saved (post only), handed over as STATE_<name>. */
  state?: Record<string, string>;
  /**
   * Kill the step (SIGKILL) if it has not exited after this long: a step that does not end is a
   * result (`killed: true`), not a caller that hangs. Default 60 s.
   */
  killAfterMs?: number;
  /** The node binary to run the step with (default: this process's). */
  node?: string;
  /** A command the step runs under, e.g. ["ip", "netns", "exec", "ns"]. */
  prefix?: string[];
}

/**
 * A step's runner environment: a fresh directory with empty GITHUB_OUTPUT and GITHUB_STATE files,
 * RUNNER_TEMP, and each input as INPUT_* over action.yml's defaults. Only PATH from this process:
 * no proxy variable can send the step anywhere but loopback.
 */
export function stepEnvironment(inputs: Record<string, string>, defaults: Readonly<Record<string, string>> = ACTION_INPUT_DEFAULTS) {
  const dir = mkdtempSync(join(tmpdir(), "tokensmith-step-"));
  const outputFile = join(dir, "output");
  const stateFile = join(dir, "state");
  writeFileSync(outputFile, "");
  writeFileSync(stateFile, "");
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", GITHUB_OUTPUT: outputFile, GITHUB_STATE: stateFile, RUNNER_TEMP: dir };
  for (const [name, value] of Object.entries({ ...defaults, ...inputs })) env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] = value;
  return { dir, outputFile, stateFile, env };
}

export async function runBundledStep(step: "main" | "post", options: StepOptions = {}): Promise<StepRun> {
  const { dir, outputFile, stateFile, env } = stepEnvironment(options.inputs ?? {});
  for (const [name, value] of Object.entries(options.state ?? {})) env[`STATE_${name}`] = value;
  for (const [name, value] of Object.entries(options.env ?? {})) if (value !== undefined) env[name] = value;
  try {
    const [command, ...args] = [...(options.prefix ?? []), options.node ?? process.execPath, join(packageRoot(), "dist", step, "index.js")];
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
    const log = `${stdout}${stderr}`.split(/\r?\n/).filter((line) => line !== "");
    return { exitCode, killed, log, outputs: parseFileCommands(readFileSync(outputFile, "utf8")), state: parseFileCommands(readFileSync(stateFile, "utf8")) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `name<<DELIMITER` … `DELIMITER` blocks, and the one-line `name=value` form; anything else throws. */
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
