import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createDashboard, loopbackHosts, type DashboardDeps } from "./create-dashboard.js";

export interface RunningDashboard {
  /** e.g. http://127.0.0.1:8081 (no trailing slash) */
  url: string;
  server: Server;
  close(): Promise<void>;
}

const LOOPBACK = /^(127(\.\d{1,3}){3}|localhost|::1)$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host);
}

/** Listens on host:port (0: any free port). On a loopback address only loopback Host headers are answered. */
export async function startDashboard(deps: Omit<DashboardDeps, "allowedHosts">, listen: { host: string; port: number }): Promise<RunningDashboard> {
  const allowedHosts = new Set<string>();
  const dashboard = createDashboard({ ...deps, allowedHosts: isLoopbackHost(listen.host) ? allowedHosts : undefined });
  const server = createServer(dashboard.listener);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  for (const host of loopbackHosts(port)) allowedHosts.add(host);
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
