import { parseArgs } from "node:util";
import type { CommandIo } from "../cli/releases-command.js";
import { isLoopbackHost } from "../../shared/loopback-address.js";
import { startDashboard } from "./start-dashboard.js";

const DASHBOARD_USAGE = `Usage: tokensmith dashboard --broker URL [--port 8081] [--host 127.0.0.1]

  dashboard  Serves a page listing the latest release of every repository the broker's App is
             installed on. The bearer secret is read from TOKENSMITH_SECRET and only ever sent
             to the broker, from this process; the browser never sees it.
  --broker   The broker's origin, e.g. https://tokensmith.example.com
  --port     Port to listen on (default 8081; 0 picks a free one).
  --host     Address to listen on (default 127.0.0.1). The dashboard has no login of its own:
             anyone who can reach it sees the releases.
  --timeout  Seconds to wait for the broker (default 60).
`;

interface DashboardCommandIo extends CommandIo {
  /** Aborted to stop serving; the process's SIGINT/SIGTERM when not given. */
  stop?: AbortSignal;
}

/** `tokensmith dashboard`: serves until stopped (0), or 2 for a usage error. */
export async function dashboardCommand(argv: readonly string[], io: DashboardCommandIo): Promise<number> {
  let values: { broker?: string; port?: string; host?: string; timeout?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { broker: { type: "string" }, port: { type: "string" }, host: { type: "string" }, timeout: { type: "string" }, help: { type: "boolean", short: "h" } },
    }));
  } catch (error) {
    return usageError(io, error instanceof Error ? error.message : String(error));
  }
  if (values.help) {
    io.out(DASHBOARD_USAGE);
    return 0;
  }
  const secret = io.env.TOKENSMITH_SECRET;
  if (!secret) {
    io.err("tokensmith: set TOKENSMITH_SECRET to the broker's PROCESS_TRIGGER_SECRET.\n");
    return 2;
  }
  if (!values.broker) return usageError(io, "--broker is required");
  let brokerUrl: URL;
  try {
    brokerUrl = new URL(values.broker.endsWith("/") ? values.broker : `${values.broker}/`);
  } catch {
    return usageError(io, `--broker is not a URL: ${values.broker}`);
  }
  if (brokerUrl.protocol !== "https:" && brokerUrl.protocol !== "http:") return usageError(io, "--broker must be an http(s) URL");
  const port = Number(values.port ?? 8081);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usageError(io, `--port is not a port: ${values.port}`);
  const timeout = Number(values.timeout ?? 60);
  if (!(timeout > 0)) return usageError(io, `--timeout is not a number of seconds: ${values.timeout}`);
  const host = values.host ?? "127.0.0.1";

  let running;
  try {
    running = await startDashboard({ brokerUrl, secret, fetch: io.fetch, timeoutMs: timeout * 1000 }, { host, port });
  } catch (error) {
    io.err(`tokensmith: could not listen on ${host}:${port} (${(error as { code?: string }).code ?? String(error)}).\n`);
    return 1;
  }
  io.out(`tokensmith dashboard: ${running.url}/ (broker ${brokerUrl.origin})\n`);
  if (!isLoopbackHost(host)) io.err(`tokensmith: listening on ${host}: anyone who can reach it sees the releases.\n`);

  await new Promise<void>((resolve) => {
    if (io.stop) {
      if (io.stop.aborted) resolve();
      else io.stop.addEventListener("abort", () => resolve(), { once: true });
      return;
    }
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await running.close();
  return 0;
}

function usageError(io: CommandIo, message: string): number {
  io.err(`tokensmith: ${message}\n\n${DASHBOARD_USAGE}`);
  return 2;
}
