import { createServer, type Server } from "node:http";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import type { Env } from "../settings.js";
import { parseAdminSettings } from "./admin-settings.js";
import { adminListener } from "./admin-listener.js";
import { createReadiness, type Readiness } from "./readiness.js";
import type { NotReadyReason } from "./readiness-checks.js";

export interface AdminHandle {
  readiness: Readiness;
  /** The bound port, once listening (ADMIN_PORT=0 picks a free one). */
  port: Promise<number>;
  close(): Promise<void>;
}

/**
 * Starts the admin listener when ADMIN_PORT is set (server/main.ts calls this before the broker
 * listens, so /readyz says 503 until it does). Returns null when it is off. A port that cannot be
 * bound is logged; the broker serves on regardless.
 */
export function startAdmin(options: { env: Env; metrics: Metrics; log: Logger; checks?: () => Promise<NotReadyReason[]> }): AdminHandle | null {
  const { log } = options;
  const settings = parseAdminSettings(options.env);
  if (!settings.enabled) return null; // a malformed ADMIN_PORT is logged with the other settings' problems
  options.metrics.collectProcessDefaults();
  const readiness = createReadiness();
  const server: Server = createServer(adminListener({ metrics: options.metrics, readiness, checks: options.checks }));
  server.on("error", (error: NodeJS.ErrnoException) => log.error({ code: error.code, port: settings.port, host: settings.host }, "admin listener failed: no /healthz, /readyz or /metrics"));
  let bound: (port: number) => void = () => undefined;
  const port = new Promise<number>((resolve) => (bound = resolve));
  const onListening = () => {
    const address = server.address();
    const actual = typeof address === "object" && address ? address.port : settings.port;
    log.info({ admin_host: settings.host, admin_port: actual }, "tokensmith admin listening");
    bound(actual);
  };
  server.listen(settings.port, settings.host, onListening);
  return {
    readiness,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
