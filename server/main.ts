import { createLogger } from "./log.js";
import { parseStartSettings } from "./start-settings.js";

// The server entry: read the start-up settings, listen, stop gracefully. Everything else is in createApp.
const start = parseStartSettings(process.env);
if (start.problems.length > 0) {
  // Nothing the operator asked for can be done instead (docs/settings.md#when-settings-are-read):
  // one line per wrong setting, written before exit, and no stack trace.
  const early = createLogger({ level: start.logLevel });
  for (const { setting, message } of start.problems) early.fatal({ setting }, message);
  process.exit(1);
}
// The rest is loaded only once the start-up settings are good: a broker that does not start stops
// without loading what it would have served with (about 0.4 s of CPU, 0.05 s left).
const [{ readinessChecks }, { startAdmin }, { createApp }, { serve }, { settingsProblems }, { resolveSecretFiles }, { parseSettings }, { startTracing, stopTracing }] = await Promise.all([
  import("./admin/readiness-checks.js"),
  import("./admin/start-admin.js"),
  import("./app.js"),
  import("./http/serve.js"),
  import("./settings-problems.js"),
  import("./secret-files.js"),
  import("./settings.js"),
  import("./tracing.js"),
]);
// OpenTelemetry traces, only when the OTEL_* environment asks (docs/operations.md#traces): the SDK
// is loaded then, and never otherwise.
const tracing = await startTracing(process.env).catch((error: unknown) => error as Error);
const app = createApp();
const log = app.broker.log;
if (tracing instanceof Error) log.error({ err: tracing.message }, "OpenTelemetry tracing could not start: running without traces");
else if (tracing) log.info({ url: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_ENDPOINT || "http://localhost:4318" }, "OpenTelemetry traces exported over OTLP");
const { port, host } = start;

// One clear line per missing required setting; the broker still starts and answers per docs/api.md.
for (const problem of settingsProblems(parseSettings(resolveSecretFiles(process.env)), process.env)) log[problem.level](problem.fields, problem.message);

// Not a problem (an operator's choice), but never silent: docs/policies.md#modes-token_policy.
if (parseSettings(resolveSecretFiles(process.env)).tokenPolicy === "off") log.info({ setting: "TOKEN_POLICY" }, "TOKEN_POLICY=off: trust policies are never read; every job of an installed repository gets TOKEN_PERMISSIONS");

// /healthz, /readyz, /metrics on ADMIN_PORT, when set: started first, so /readyz is 503 until the broker listens.
// /readyz also says why a listening broker cannot mint (App, stores, key sets); the first check
// runs at once, so the key set is fetched at start rather than by the first job.
const checks = readinessChecks(app.broker);
const admin = startAdmin({ env: process.env, metrics: app.broker.metrics, log, checks });
const server = serve(app, port, host, () => {
  admin?.readiness.listening();
  if (admin) void checks();
  const address = server.address();
  log.info({ host, port: typeof address === "object" && address ? address.port : port, max_connections: server.maxConnections }, "tokensmith broker listening");
}, {
  maxConnections: start.maxConnections,
  // The address is taken, or not this machine's: one line, exit 1, as for a wrong setting.
  onListenError: (error) => {
    log.fatal({ setting: "PORT", host, port, code: error.code }, `cannot listen on ${host}:${port} (${error.code ?? "error"}): the broker does not start`);
    process.exit(1);
  },
});

let stopping = false;
function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  admin?.readiness.draining();
  log.info({ signal }, "shutting down: no new connections, finishing requests in flight");
  const force = setTimeout(() => {
    log.error("requests still in flight after 9 s; exiting");
    process.exit(1);
  }, 9_000);
  force.unref();
  // A keep-alive connection whose response has finished is idle: close it at once, or a client
  // would hold the server open until its keep-alive timeout. Swept while stopping, so requests
  // pay nothing for it the rest of the time.
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  sweep.unref();
  server.close(() => {
    clearInterval(sweep);
    // Spans still batched are sent (bounded: an unreachable collector does not hold the exit).
    void app
      .close()
      .then(() => Promise.race([stopTracing(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]))
      .finally(() => process.exit(0));
  });
  server.closeIdleConnections();
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));
