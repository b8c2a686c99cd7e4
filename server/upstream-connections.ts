import type { Socket } from "node:net";
import { Agent, buildConnector } from "undici";

// The broker's connection pool for every upstream call (upstream-fetch.ts), and connections opened
// ahead of need (issue 28). A new connection to GitHub carries no request before its handshakes
// are done: TCP's round trip, then TLS's. A fresh crawl (the first after a deploy, or after the
// pool's idle connections closed) sends its mints all at once, then its release queries all at
// once, and undici opens a connection for each request that finds none idle: every wave waits a
// handshake more than the floor's chain of round trips (bench/scenarios/releases.js).
// `preconnect()` opens them while the crawl's first request is on its way, so the waves find them
// ready. Kept for speed, not correctness: fresh 20 × 50 crawl over the 40 ms / 100 Mbit link, one
// handshake round trip per connection, median of 3 (`npm run bench -- releases`):
// see docs/operations.md, "Fast paths", for the figures.
//
// A connection opened ahead and not claimed within WARM_IDLE_MS is closed (undici closes its own
// idle ones after 4 s): at most a few seconds of idle sockets. One that fails or closes while it
// waits is dropped; the request that would have taken it opens its own, as without this.

/** An unclaimed warm connection is closed after this long (undici's own keep-alive default). */
const WARM_IDLE_MS = 4_000;
/** Never more than this many warm connections per origin (GitHub allows 100 concurrent requests). */
const MAX_WARM = 64;

interface Warm {
  /** The socket once connected; null when it failed or was closed before anyone took it. */
  socket: Promise<Socket | null>;
  claimed: boolean;
}

type Params = Parameters<buildConnector.connector>[0];

const connectNow = buildConnector({});
const warm = new Map<string, Warm[]>();

const keyOf = (protocol: string, hostname: string, port: string | number | null | undefined): string =>
  `${protocol}//${hostname}:${port || (protocol === "https:" ? 443 : 80)}`;

/** undici's connector: a warm connection to the origin when one is waiting, else a new one. */
const connect: buildConnector.connector = (params, callback) => {
  const key = keyOf(params.protocol, params.hostname, params.port);
  const list = warm.get(key);
  const entry = list?.shift();
  if (list?.length === 0) warm.delete(key);
  if (entry === undefined) return connectNow(params, callback);
  entry.claimed = true;
  void entry.socket.then((socket) => {
    if (socket === null || socket.destroyed) return connectNow(params, callback);
    socket.ref();
    callback(null, socket);
  });
};

/** The dispatcher upstream-fetch.ts sends with: undici's defaults, and the connector above. */
export const upstreamAgent = new Agent({ connect });

/** The origin's connections in the pool that are open and idle (not the warm ones). */
export function idleConnections(origin: string): number {
  return (upstreamAgent.stats as Record<string, { free?: number }>)[new URL(origin).origin]?.free ?? 0;
}

/** The origin's idle connections plus the warm ones not yet taken. */
export function readyConnections(origin: string): number {
  const url = new URL(origin);
  return idleConnections(origin) + (warm.get(keyOf(url.protocol, hostnameOf(url), url.port))?.length ?? 0);
}

/**
 * Opens connections to `origin` until `count` are ready (idle in the pool or warm), at most
 * MAX_WARM warm ones. Returns how many it opened. Never throws: a connection that cannot be
 * opened is simply not there when a request looks for one.
 */
export function preconnect(origin: string, count: number, idleMs: number = WARM_IDLE_MS): number {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return 0;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return 0;
  const hostname = hostnameOf(url);
  const key = keyOf(url.protocol, hostname, url.port);
  const list = warm.get(key) ?? [];
  const opening = Math.max(0, Math.min(count - readyConnections(origin), MAX_WARM - list.length));
  const params = { host: url.host, hostname, protocol: url.protocol, port: url.port, servername: null, localAddress: null } as unknown as Params;
  for (let i = 0; i < opening; i += 1) {
    const entry: Warm = { claimed: false, socket: Promise.resolve(null) };
    const drop = () => {
      const at = warm.get(key)?.indexOf(entry) ?? -1;
      if (at !== -1) warm.get(key)!.splice(at, 1);
      if (warm.get(key)?.length === 0) warm.delete(key);
    };
    entry.socket = new Promise((resolve) => {
      connectNow(params, (error, socket) => {
        if (error || !socket) {
          drop();
          return resolve(null);
        }
        // While it waits it holds nothing open: the process may exit under it.
        socket.unref();
        socket.once("close", () => {
          if (!entry.claimed) drop();
        });
        const timer = setTimeout(() => {
          if (entry.claimed) return;
          drop();
          socket.destroy();
        }, idleMs);
        timer.unref();
        resolve(socket);
      });
    });
    list.push(entry);
  }
  if (list.length > 0) warm.set(key, list);
  return opening;
}

/** undici writes an IPv6 host without its brackets. */
function hostnameOf(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
}
