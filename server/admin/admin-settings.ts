import { DEFAULT_ADMIN_HOST, isListenHost, parsePort } from "../listen-host.js";
import type { Env } from "../settings.js";

/** ADMIN_PORT / ADMIN_HOST (docs/settings.md): the admin listener is off unless ADMIN_PORT is set. */
export type AdminSettings =
  | { enabled: false; problems?: Array<{ setting: "ADMIN_PORT" | "ADMIN_HOST"; message: string }> }
  | { enabled: true; port: number; host: string };

/** Read at start. A wrong value is a problem the broker does not start with (server/start-settings.ts). */
export function parseAdminSettings(env: Env): AdminSettings {
  const port = parsePort(env.ADMIN_PORT, null);
  // Loopback unless told otherwise: the admin routes have no authentication of their own.
  const host = env.ADMIN_HOST?.trim() || DEFAULT_ADMIN_HOST;
  const problems: Array<{ setting: "ADMIN_PORT" | "ADMIN_HOST"; message: string }> = [];
  if (port === "invalid") problems.push({ setting: "ADMIN_PORT", message: "ADMIN_PORT is not a port number (0-65535)" });
  if (!isListenHost(host)) problems.push({ setting: "ADMIN_HOST", message: "ADMIN_HOST is not an IP address or a host name" });
  if (problems.length > 0) return { enabled: false, problems };
  if (port === null) return { enabled: false };
  return { enabled: true, port: port as number, host };
}
