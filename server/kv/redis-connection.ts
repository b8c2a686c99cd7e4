import { createRequire } from "node:module";
import type { Redis } from "ioredis";
import { createStoreBreaker, type StoreBreaker } from "./store-breaker.js";

/** ioredis, loaded when a Redis store is first opened (a broker without one never loads it). */
let ioredis: typeof import("ioredis") | undefined;
const loadIoredis = () => (ioredis ??= createRequire(import.meta.url)("ioredis") as typeof import("ioredis"));

/**
 * The broker's one Redis client library (ioredis, which BullMQ needs too) and one connection per
 * store URL, shared by the key-value stores and the lease lock of that URL (docs/design.md#state).
 * Commands issued while it is down fail at once (no offline queue piling up behind a dead store);
 * it reconnects in the background. It connects on first use: `ready()` inside a bounded call, so
 * that the connection counts against the call's time bound.
 */
export interface RedisConnection {
  readonly redis: Redis;
  /** Shared by every store and lock on this connection: one failure skips them all for a while. */
  readonly breaker: StoreBreaker;
  /** Connects on the first call; resolves when connected (rejects when the attempt fails). */
  ready(): Promise<void>;
  close(): void;
}

export function isRedisUrl(url: string | null | undefined): url is string {
  const scheme = url?.split(":", 1)[0]?.toLowerCase();
  return scheme === "redis" || scheme === "rediss";
}

export function openRedisConnection(url: string, options: { timeoutMs: number }): RedisConnection {
  const redis = new (loadIoredis().Redis)(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: options.timeoutMs,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  let connecting: Promise<void> | undefined;
  return {
    redis,
    breaker: createStoreBreaker(),
    async ready() {
      if (redis.status === "wait") connecting ??= redis.connect().finally(() => (connecting = undefined));
      if (connecting) await connecting;
    },
    close() {
      redis.disconnect();
    },
  };
}
