// Runs the bundled action (dist/main/index.js, dist/post/index.js) in a child process the way the
// Actions runner does: inputs as INPUT_<NAME>, GITHUB_OUTPUT / GITHUB_STATE files read back in the
// runner's file-command format, saved state handed to post as STATE_<name>.
// https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/workflow-commands-for-github-actions
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package root: build/server/sandbox/ → ../../../ (and server/sandbox/ → ../../ under ts-jest). */
function packageRoot(): string {
  const here = fileURLToPath(new URL(".", import.meta.url));
  return join(here, here.includes(`${join("build", "server")}`) ? "../../../" : "../../");
}

/** action.yml's defaults, as the runner fills them in for inputs a workflow does not give. */
export const ACTION_INPUT_DEFAULTS: Readonly<Record<string, string>> = { "broker-fallback-url": "", "oidc-audience": "tokensmith", "skip-token-revoke": "false" };

export interface StepRun {
  exitCode: number | null;
  /** stdout then stderr, line by line: what the runner shows in the job's log. */
  log: string[];
  outputs: Record<string, string>;
  state: Record<string, string>;
}

export async function runBundledStep(
  step: "main" | "post",
  options: { inputs: Record<string, string>; env: Record<string, string>; state?: Record<string, string>; killAfterMs?: number },
): Promise<StepRun> {
  const dir = mkdtempSync(join(tmpdir(), "tokensmith-sandbox-step-"));
  const outputFile = join(dir, "output");
  const stateFile = join(dir, "state");
  writeFileSync(outputFile, "");
  writeFileSync(stateFile, "");
  // Only PATH from this process: no proxy variable can send the step anywhere but loopback.
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", GITHUB_OUTPUT: outputFile, GITHUB_STATE: stateFile, RUNNER_TEMP: dir, ...options.env };
  for (const [name, value] of Object.entries({ ...ACTION_INPUT_DEFAULTS, ...options.inputs })) env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] = value;
  for (const [name, value] of Object.entries(options.state ?? {})) env[`STATE_${name}`] = value;
  try {
    const child = spawn(process.execPath, [join(packageRoot(), "dist", step, "index.js")], { env, cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const killer = setTimeout(() => child.kill("SIGKILL"), options.killAfterMs ?? 60_000);
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", (code) => resolve(code));
    }).finally(() => clearTimeout(killer));
    const log = `${stdout}${stderr}`.split(/\r?\n/).filter((line) => line !== "");
    return { exitCode, log, outputs: fileCommands(readFileSync(outputFile, "utf8")), state: fileCommands(readFileSync(stateFile, "utf8")) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `name<<DELIMITER` … `DELIMITER` blocks, and the one-line `name=value` form. */
function fileCommands(text: string): Record<string, string> {
  const result: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heredoc = /^([^=]+?)<<(.+)$/.exec(line);
    if (heredoc) {
      const value: string[] = [];
      for (i++; i < lines.length && lines[i] !== heredoc[2]; i++) value.push(lines[i]!);
      result[heredoc[1]!] = value.join("\n");
      continue;
    }
    const eq = line.indexOf("=");
    if (eq > 0) result[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return result;
}
