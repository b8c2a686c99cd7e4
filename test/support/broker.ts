// Test helpers: an in-process broker on an ephemeral port, with its log captured and every
// upstream call confined to loopback (a test must never be able to reach the real platform).
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { Writable } from "node:stream";
import { createApp, type BrokerApp } from "../../server/app.js";
import type { BrokerDeps, Timing } from "../../server/context.js";
import { serve } from "../../server/http/serve.js";
import { createLogger } from "../../server/log.js";
import { upstreamFetch } from "../../server/upstream-fetch.js";
import { keepLogs } from "./log-sink.js";

function refuseNonLoopback(input: string | URL | Request): Promise<never> | null {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  if (["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) return null;
  return Promise.reject(new Error(`test fetch refused a non-loopback address: ${url.hostname}`));
}

/** The global fetch, confined to loopback (what the dashboard and the CLI send with). */
export const loopbackOnlyFetch: typeof fetch = (input, init) => refuseNonLoopback(input) ?? fetch(input, init);

/** The broker's own transport (server/upstream-fetch.ts), confined to loopback: the brokers tests start send with it. */
export const loopbackOnlyUpstreamFetch: typeof fetch = (input, init) => refuseNonLoopback(input) ?? upstreamFetch(input, init);

export interface TestBroker {
  url: string;
  app: BrokerApp;
  /** The broker reads this object on every request: mutate it to change a setting. */
  env: Record<string, string | undefined>;
  /** Every log line the broker wrote, raw. */
  logs: string[];
  /** Connections the broker holds open at this moment (its server's count). */
  connections(): Promise<number>;
  close(): Promise<void>;
}

/** Fast timings for tests: no retry sleeps worth waiting for, no cooldown unless a test asks. */
export const TEST_TIMING: Partial<Timing> = { jwksCooldownMs: 0, snapshotRetryMs: 200, jwksTimeoutMs: 1000, upstreamTimeoutMs: 2000, kvTimeoutMs: 300 };

export async function startBroker(
  env: Record<string, string | undefined>,
  options: { timing?: Partial<Timing>; now?: () => number; retry?: BrokerDeps["retry"]; sleep?: BrokerDeps["sleep"] } = {},
): Promise<TestBroker> {
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split("\n").filter((line) => line !== ""));
      done();
    },
  });
  // `env` as the test has it at that moment, with SENDER_REQUESTS_PER_SECOND "0" while it sets none.
  const OFF = "SENDER_REQUESTS_PER_SECOND";
  const unset = (target: Record<string, string | undefined>) => target[OFF] === undefined;
  const withDefaults = new Proxy(env, {
    get: (target, name) => (name === OFF && unset(target) ? "0" : Reflect.get(target, name)),
    has: (target, name) => name === OFF || Reflect.has(target, name),
    ownKeys: (target) => [...new Set([...Reflect.ownKeys(target), OFF])],
    getOwnPropertyDescriptor: (target, name) =>
      name === OFF && unset(target) ? { value: "0", enumerable: true, configurable: true, writable: true } : Reflect.getOwnPropertyDescriptor(target, name),
  });
  const app = createApp({
    // The suite's clients all send from 127.0.0.1, faster than any one real sender: the per-sender
    // rate is off unless a test sets it (test/sender-admission.test.ts does).
    env: () => withDefaults,
    fetch: loopbackOnlyUpstreamFetch,
    logger: createLogger({ level: "debug", destination }),
    timing: { ...TEST_TIMING, ...options.timing },
    now: options.now,
    sleep: options.sleep,
    retry: options.retry ?? { attempts: 3, baseDelayMs: 10, maxWaitMs: 2000 },
  });
  const server: Server = await new Promise((resolve) => {
    const listening = serve(app, 0, "127.0.0.1", () => resolve(listening));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    env,
    logs,
    connections: () => new Promise<number>((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count)))),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
      keepLogs(logs);
    },
  };
}

/** POST a JSON body and return status, headers and parsed body (post-json.ts, which loads no broker). */
export { postJson } from "./post-json.js";
