import { isIP } from "node:net";
import type { Env } from "./settings.js";

/** Where the broker listens without `HOST` (docs/design.md#decisions-where-the-contract-was-open): every IPv4 interface, as a container expects. */
const DEFAULT_HOST = "0.0.0.0";
/** Where the admin listener listens without `ADMIN_HOST`: `/metrics` and `/readyz` are for the machine's own scraper. */
export const DEFAULT_ADMIN_HOST = "127.0.0.1";

/** `HOST`, trimmed, or the default: an address or a name Node's `listen` resolves. */
export function brokerHost(env: Env): string {
  return env.HOST?.trim() || DEFAULT_HOST;
}

/** A TCP port, 0 (any free one) to 65535; unset or blank → `fallback`. */
export function parsePort(raw: string | undefined, fallback: number | null): number | null | "invalid" {
  const text = (raw ?? "").trim();
  if (text === "") return fallback;
  if (!/^[0-9]{1,5}$/.test(text)) return "invalid";
  const port = Number(text);
  return port <= 65535 ? port : "invalid";
}

/** An address or a host name Node's `listen` can resolve: an IPv4/IPv6 literal (no brackets) or DNS labels. */
export function isListenHost(text: string): boolean {
  if (isIP(text) !== 0) return true;
  return text.length <= 253 && /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?$/.test(text);
}
