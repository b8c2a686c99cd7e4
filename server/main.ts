import { readinessChecks } from "./admin/readiness-checks.js";
import { startAdmin } from "./admin/start-admin.js";
import { createApp } from "./app.js";
import { parseMaxConnections } from "./http/limits.js";
import { serve } from "./http/serve.js";
import { brokerHost } from "./listen-host.js";
import { settingsProblems } from "./settings-problems.js";
import { parseSettings } from "./settings.js";

// The server entry: read PORT and HOST, listen, stop gracefully. Everything else is in createApp.
const app = createApp();
const log = app.broker.log;
const port = Number(process.env.PORT || 8080);
const host = brokerHost(process.env);

// One clear line per missing required setting; the broker still starts and answers per the spec.
for (const problem of settingsProblems(parseSettings(process.env), process.env)) log[problem.level](problem.fields, problem.message);

// Not a problem (an operator's choice), but never silent: DESIGN.md "Mode".
if (parseSettings(process.env).tokenPolicy === "off") log.info({ setting: "TOKEN_POLICY" }, "TOKEN_POLICY=off: trust policies are never read; every job of an installed repository gets TOKEN_PERMISSIONS");

const maxConnections = parseMaxConnections(process.env.MAX_CONNECTIONS);
if (maxConnections.problem) log.warn({ setting: "MAX_CONNECTIONS" }, maxConnections.problem);
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
}, { maxConnections: maxConnections.value });

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
    void app.close().finally(() => process.exit(0));
  });
  server.closeIdleConnections();
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));
