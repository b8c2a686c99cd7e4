import type { Env } from "./settings.js";

/** Where the broker listens without `HOST` (DESIGN.md): every IPv4 interface, as a container expects. */
export const DEFAULT_HOST = "0.0.0.0";
/** Where the admin listener listens without `ADMIN_HOST`: `/metrics` and `/readyz` are for the machine's own scraper. */
export const DEFAULT_ADMIN_HOST = "127.0.0.1";

/** `HOST`, trimmed, or the default: an address or a name Node's `listen` resolves. */
export function brokerHost(env: Env): string {
  return env.HOST?.trim() || DEFAULT_HOST;
}
