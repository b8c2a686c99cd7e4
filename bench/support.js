// Helpers shared by bench scenarios: an in-process broker on an ephemeral port, timing, stats.

/**
 * The built broker (what `npm start` serves), in this process, silent, on a loopback port. Imported
 * here, not at the top: a scenario that only takes the stats below loads no broker (0.5 s of CPU).
 */
export async function startBroker(env) {
  const [{ createApp }, { createLogger }] = await Promise.all([import("../build/server/app.js"), import("../build/server/log.js")]);
  const app = createApp({ env: () => env, logger: createLogger({ level: "silent" }) });
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    env,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(() => resolve()));
      await app.close();
    },
  };
}

/** Runs `call` and returns its result with the wall time in milliseconds. */
export async function timed(call) {
  const started = performance.now();
  const result = await call();
  return { result, ms: performance.now() - started };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Seconds with three decimals: "0.512 s". */
export const seconds = (ms) => `${(ms / 1000).toFixed(3)} s`;

/** Megabytes with two decimals: "0.89 MB". */
export const megabytes = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`;

/** "40 ms / 100 Mbit" */
export const linkName = (link) => `${link.rttMs} ms / ${link.mbit} Mbit`;

/** The link's byte counts since `before` (a copy of `link.stats` taken earlier). */
export function bytesSince(link, before) {
  return { up: link.stats.bytesUp - before.bytesUp, down: link.stats.bytesDown - before.bytesDown, connections: link.stats.connections - before.connections };
}
