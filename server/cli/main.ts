import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
// Each command's modules are loaded when it runs (below), not by every start: `policy check` needs
// neither the platform client nor the dashboard's server, and `--help` needs nothing.
import type { CommandIo } from "./releases-command.js";
import { stopWithParent } from "./stop-with-parent.js";

const USAGE = `Usage: tokensmith serve
       tokensmith --version
       tokensmith doctor
       tokensmith releases --url URL [--json]
       tokensmith dashboard --broker URL [--port 8081] [--host 127.0.0.1]
       tokensmith sandbox [--json] [--demo] [--port N] [--world FILE] [--link RTT/MBIT]
       tokensmith policy check [FILE] | explain --claims FILE [--repo owner/name]

  serve      Run the broker (settings from the environment; PORT, default 8080).
  doctor     Check the settings in the environment as the broker reads them: the App key, each
             installation's permissions (and whether it can read its owner's policy in .github),
             the OIDC issuers, the Redis bindings. Exit 1 if any fails.
  releases   The latest release of every repository the broker's App is installed on.
             The bearer secret is read from TOKENSMITH_SECRET.
  dashboard  Serve a web page of those releases (tokensmith dashboard --help); the secret, from
             TOKENSMITH_SECRET, stays in this process.
  sandbox    A fake CI platform and a broker on loopback, to try tokensmith or test a release
             workflow against (tokensmith sandbox --help). Every token it prints is fake.
  policy     Validate a trust policy offline, or explain which rule holds for a job's claims
             (tokensmith policy --help).
  --url      The broker's origin, e.g. https://tokensmith.example.com
  --json     Print the broker's answer as JSON instead of a table.
`;

/** The CLI's entry: parses argv and runs one command. Exit code as the result. */
export async function runCli(argv: readonly string[], io: CommandIo): Promise<number> {
  if (argv[0] === "dashboard") return (await import("../dashboard/dashboard-command.js")).dashboardCommand(argv.slice(1), io);
  if (argv[0] === "policy") return (await import("./policy-command.js")).policyCommand(argv.slice(1), io);
  if (argv[0] === "sandbox") return (await import("../sandbox/sandbox-command.js")).sandboxCommand(argv.slice(1), io, io.stopped ?? (() => new Promise(() => {})));
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.err(`tokensmith: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    return 2;
  }
  const [command, ...rest] = parsed.positionals;
  if (parsed.values.version && command === undefined) {
    io.out(`tokensmith ${packageVersion()}\n`);
    return 0;
  }
  if (parsed.values.help) {
    io.out(USAGE);
    return 0;
  }
  if ((command === "serve" || command === "doctor") && rest.length === 0 && !parsed.values.url && !parsed.values.json) {
    if (command === "doctor") return (await import("./doctor-command.js")).doctorCommand(io);
    await io.serve();
    return 0;
  }
  if (command !== "releases" || rest.length > 0) {
    io.err(`tokensmith: ${command ? `unknown command: ${[command, ...rest].join(" ")}` : "no command given"}\n\n${USAGE}`);
    return 2;
  }
  if (!parsed.values.url) {
    io.err(`tokensmith: --url is required\n\n${USAGE}`);
    return 2;
  }
  return (await import("./releases-command.js")).releasesCommand({ url: parsed.values.url, json: parsed.values.json ?? false }, io);
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: { url: { type: "string" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" }, version: { type: "boolean", short: "v" } },
  });
}

/** The installed package's version (package.json two folders up from build/server/cli/). */
function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

/** Runs with the real process: only the launcher (bin/tokensmith.js) calls this. */
export async function main(): Promise<void> {
  // A reader that stops early (`tokensmith doctor | head`) closes the pipe: stop quietly, as
  // command-line tools do, instead of crashing on EPIPE.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") throw error;
      process.exit(process.exitCode ?? 0);
    });
  }
  const code = await runCli(process.argv.slice(2), {
    env: process.env,
    fetch: globalThis.fetch,
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    // The broker's entry: listens, and stops on SIGTERM (server/main.ts).
    serve: async () => {
      await import("../main.js");
      stopWithParent();
    },
    stopped: () => new Promise((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    }),
  });
  process.exitCode = code;
}
