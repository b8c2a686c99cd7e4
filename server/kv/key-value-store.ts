import { randomUUID } from "node:crypto";
import Keyv from "keyv";
import type { Logger } from "../log.js";
import { redactUrl } from "../../shared/redact-url.js";
import { boundedCall, throttledWarning, type StoreCallOutcome } from "./bounded-call.js";
import { openLeaseLock, type LeaseLock } from "./lease-lock.js";
import { isRedisUrl, openRedisConnection, type RedisConnection } from "./redis-connection.js";
import { RedisKeyvStore } from "./redis-keyv-store.js";

/**
 * The API's key-value bindings (SERVICE_JWKS_CACHE, LEGACY_QUOTA_KV) as Keyv stores. Every call is
 * bounded by a short timeout and never throws: if the store is down the broker behaves as if the
 * binding were unset (docs/design.md#decisions-where-the-contract-was-open) and logs it.
 */
export interface KeyValueStore {
  readonly url: string;
  get<T>(key: string): Promise<T | undefined>;
  set<T>(key: string, value: T, ttlMs: number): Promise<boolean>;
  /** Whether the store answers a read within the bound (/readyz asks); never throws. */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}

interface StoreOptions {
  log: Logger;
  /** Upper bound on any one store call. */
  timeoutMs: number;
  /** Told the outcome of every call to a Redis store or lease lock (the broker's metric). */
  countCall?: (outcome: StoreCallOutcome) => void;
}

/**
 * A store for `url` (`redis://`, `rediss://` or `memory://`). On Redis it uses `connection` when
 * given (the registry's, shared with the lease lock of that URL), else a connection of its own,
 * closed with the store.
 */
export function openKeyValueStore(url: string, namespace: string, options: StoreOptions, connection?: RedisConnection): KeyValueStore {
  const scheme = url.split(":", 1)[0]?.toLowerCase();
  const redis = isRedisUrl(url);
  if (!redis && scheme !== "memory") throw new Error(`unsupported key-value store scheme: ${scheme}`);
  const own = redis && !connection ? openRedisConnection(url, options) : undefined;
  const store = redis ? new RedisKeyvStore((connection ?? own)!) : undefined;
  // memory://: Keyv's own Map, holding values as they are: no JSON round trip on every read (a
  // large value such as the /releases aggregate would cost milliseconds). Readers must not mutate
  // what they get. (An explicit `store: undefined` would leave Keyv without its Map.)
  // On Redis, Keyv throws what the store throws (by default it answers a failed read as a miss, in
  // silence): a failed call is then told to the breaker and counted as the failure it is.
  const keyv = store ? new Keyv({ store, namespace, throwOnErrors: true }) : new Keyv({ namespace, serialize: undefined, deserialize: undefined });
  const warn = throttledWarning((op, error) => options.log.warn({ store: redactUrl(url), op, err: errorName(error) }, "key-value store unavailable; continuing without it"));
  keyv.on("error", (error: unknown) => warn("event", error));
  own?.redis.on("error", (error: unknown) => warn("event", error));

  const bounded = boundedCall(options.timeoutMs, warn, (connection ?? own)?.breaker, redis ? options.countCall : undefined);

  return {
    url,
    get: <T>(key: string) => bounded<T | undefined>("get", undefined, async () => (await keyv.get<T>(key)) ?? undefined),
    set: <T>(key: string, value: T, ttlMs: number) => bounded("set", false, async () => Boolean(await keyv.set(key, value, ttlMs))),
    // A write read back: Keyv may answer a read `undefined` without throwing while its client is
    // still connecting, so only a value that made the round trip proves the store answers.
    // A key of the probe's own (expiring in 10 s), so probes at once, from one instance or several
    // on one Redis, never read each other's.
    reachable: () => bounded("ping", false, async () => {
      const nonce = randomUUID();
      const key = `readyz-probe:${nonce}`;
      if (!(await keyv.set(key, nonce, 10_000))) return false;
      return (await keyv.get<string>(key)) === nonce;
    }, { probe: true }),
    close: async () => {
      own?.close();
    },
  };
}

/**
 * Stores are opened once per URL and namespace and reused across requests; so are lease locks,
 * one Redis connection per store URL (memory:// and unusable URLs have none: a lock only matters
 * between processes).
 */
export function createStoreRegistry(options: StoreOptions) {
  const stores = new Map<string, KeyValueStore>();
  const locks = new Map<string, LeaseLock>();
  const connections = new Map<string, RedisConnection>();
  /** The one connection of a Redis URL (throws when the URL is not usable). */
  const connectionFor = (url: string): RedisConnection => {
    let connection = connections.get(url);
    if (!connection) {
      connection = openRedisConnection(url, options);
      const warn = throttledWarning((op, error) => options.log.warn({ store: redactUrl(url), op, err: errorName(error) }, "Redis unavailable; going on without it"));
      connection.redis.on("error", (error: unknown) => warn("event", error));
      connections.set(url, connection);
    }
    return connection;
  };
  return {
    /** The one connection of a Redis URL (null for anything else, or a URL ioredis refuses). */
    redisFor(url: string | null): RedisConnection | null {
      if (!isRedisUrl(url)) return null;
      try {
        return connectionFor(url);
      } catch (error) {
        options.log.error({ store: redactUrl(url), err: errorName(error) }, "Redis URL not usable; going on without it");
        return null;
      }
    },
    lockFor(url: string | null): LeaseLock | null {
      if (!isRedisUrl(url)) return null;
      let lock = locks.get(url);
      if (!lock) {
        try {
          lock = openLeaseLock(url, options, connectionFor(url));
        } catch (error) {
          options.log.error({ store: redactUrl(url), err: errorName(error) }, "key-value store URL not usable for a lock; going on without it (each instance crawls, claims deliveries by the store alone)");
          return null;
        }
        locks.set(url, lock);
      }
      return lock;
    },
    get(url: string | null, namespace: string): KeyValueStore | null {
      if (!url) return null;
      const key = `${namespace}\u0000${url}`;
      let store = stores.get(key);
      if (!store) {
        try {
          store = openKeyValueStore(url, namespace, options, isRedisUrl(url) ? connectionFor(url) : undefined);
        } catch (error) {
          options.log.error({ store: redactUrl(url), err: errorName(error) }, "key-value store URL not usable; binding ignored");
          return null;
        }
        stores.set(key, store);
      }
      return store;
    },
    async closeAll(): Promise<void> {
      await Promise.all([...stores.values()].map((s) => s.close()));
      await Promise.all([...locks.values()].map((l) => l.close()));
      for (const connection of connections.values()) connection.close();
      stores.clear();
      locks.clear();
      connections.clear();
    },
  };
}

export type StoreRegistry = ReturnType<typeof createStoreRegistry>;

function errorName(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message.slice(0, 200)}` : String(error);
}
