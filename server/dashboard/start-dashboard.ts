import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { isLoopbackHost, isLoopbackHostHeader } from "../../shared/loopback-address.js";
import { createDashboard, type DashboardDeps } from "./create-dashboard.js";

export interface RunningDashboard {
  /** e.g. http://127.0.0.1:8081 (no trailing slash) */
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * Listens on host:port (0: any free port). On a loopback address (any spelling of one: `127.1`
 * binds 127.0.0.1 too) only a `Host` naming a loopback address and this port is answered.
 */
export async function startDashboard(deps: Omit<DashboardDeps, "answersHost">, listen: { host: string; port: number }): Promise<RunningDashboard> {
  let bound = -1; // no Host is answered before the port is known
  const dashboard = createDashboard({ ...deps, answersHost: isLoopbackHost(listen.host) ? (host) => isLoopbackHostHeader(host, bound) : undefined });
  const server = createServer(dashboard.listener);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  bound = port;
  const shown = listen.host.includes(":") ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${shown}:${port}`,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
