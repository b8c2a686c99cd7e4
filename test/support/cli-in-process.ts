// The CLI's entry, runCli (server/cli/main.ts, what bin/tokensmith.js runs), called in the test's
// own process: what a command decides and prints, without a child process's start (0.1 to 0.4 s of
// CPU each, most of it loading modules). A file that uses it still runs each of its commands as a
// real process at least once: argv, the exit code, stdout apart from stderr.
import { runCli } from "../../server/cli/main.js";

export type CliRun = { code: number; stdout: string; stderr: string };

/**
 * `tokensmith ARGV` with `env` (and PATH) as its environment. `cwd`: where relative file names are
 * read from; `fetch`: the command's network (the process's own fetch unless given). A throw is
 * what the process would exit 1 with, its stack on stderr.
 */
export async function cliInProcess(argv: readonly string[], env: Record<string, string | undefined>, options: { cwd?: string; fetch?: typeof fetch } = {}): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  try {
    const code = await runCli(argv, {
      env: { PATH: process.env.PATH, ...env },
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      fetch: options.fetch ?? globalThis.fetch,
      out: (text) => (stdout += text),
      err: (text) => (stderr += text),
      serve: async () => {
        throw new Error(`tokensmith ${argv.join(" ")} started a broker`);
      },
    });
    return { code, stdout, stderr };
  } catch (error) {
    return { code: 1, stdout, stderr: stderr + String((error as Error).stack ?? error) };
  }
}
