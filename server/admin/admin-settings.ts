import { DEFAULT_ADMIN_HOST } from "../listen-host.js";
import type { Env } from "../settings.js";

/** ADMIN_PORT / ADMIN_HOST (DESIGN.md): the admin listener is off unless ADMIN_PORT is set. */
export type AdminSettings =
  | { enabled: false; problem?: string }
  | { enabled: true; port: number; host: string };

export function parseAdminSettings(env: Env): AdminSettings {
  const raw = env.ADMIN_PORT?.trim();
  if (raw === undefined || raw === "") return { enabled: false };
  const port = /^[0-9]{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 0 && port <= 65535)) return { enabled: false, problem: "ADMIN_PORT is not a port number (0-65535): the admin listener is off" };
  // Loopback unless told otherwise: the admin routes have no authentication of their own.
  return { enabled: true, port, host: env.ADMIN_HOST?.trim() || DEFAULT_ADMIN_HOST };
}
