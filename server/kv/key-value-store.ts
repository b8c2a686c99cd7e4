import { randomUUID } from "node:crypto";
import Keyv from "keyv";
import KeyvRedis from "@keyv/redis";
import type { Logger } from "../log.js";
import { redactUrl } from "../redact-url.js";
import { openLeaseLock, type LeaseLock } from "./lease-lock.js";

/**
 * The spec's key-value bindings (SERVICE_JWKS_CACHE, LEGACY_QUOTA_KV) as Keyv stores. Every call is
 * bounded by a short timeout and never throws: if the store is down the broker behaves as if the
 * binding were unset (DESIGN.md) and logs it.
 */
export interface KeyValueStore {
  readonly url: string;
  get<T>(key: string): Promise<T | undefined>;
  set<T>(key: string, value: T, ttlMs: number): Promise<boolean>;
  /** Whether the store answers a read within the bound (/readyz asks); never throws. */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}

export interface StoreOptions {
  log: Logger;
  /** Upper bound on any one store call. */
  timeoutMs: number;
}

export function openKeyValueStore(url: string, namespace: string, options: StoreOptions): KeyValueStore {
  const scheme = url.split(":", 1)[0]?.toLowerCase();
  const redis = scheme === "redis" || scheme === "rediss";
  if (!redis && scheme !== "memory") throw new Error(`unsupported key-value store scheme: ${scheme}`);
  const store = redis
    ? new KeyvRedis(url, { throwOnConnectError: false, throwOnErrors: true, connectionTimeout: options.timeoutMs })
    : undefined;
  // memory://: Keyv's own Map, holding values as they are: no JSON round trip on every read (a
  // large value such as the /releases aggregate would cost milliseconds). Readers must not mutate
  // what they get. (An explicit `store: undefined` would leave Keyv without its Map.)
  const keyv = store ? new Keyv({ store, namespace }) : new Keyv({ namespace, serialize: undefined, deserialize: undefined });
  let lastWarned = 0;
  const warn = (op: string, error: unknown) => {
    // One line per few seconds at most: an outage must not flood the log.
    const now = Date.now();
    if (now - lastWarned < 5000) return;
    lastWarned = now;
    options.log.warn({ store: redactUrl(url), op, err: errorName(error) }, "key-value store unavailable; continuing without it");
  };
  keyv.on("error", (error: unknown) => warn("event", error));
  store?.on("error", (error: unknown) => warn("event", error));

  const bounded = boundedCall(options.timeoutMs, warn);

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
    }),
    close: async () => {
      await bounded("close", undefined, async () => {
        await keyv.disconnect();
      });
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
  return {
    lockFor(url: string | null): LeaseLock | null {
      const scheme = url?.split(":", 1)[0]?.toLowerCase();
      if (!url || (scheme !== "redis" && scheme !== "rediss")) return null;
      let lock = locks.get(url);
      if (!lock) {
        try {
          lock = openLeaseLock(url, options);
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
          store = openKeyValueStore(url, namespace, options);
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
      stores.clear();
      locks.clear();
    },
  };
}

export type StoreRegistry = ReturnType<typeof createStoreRegistry>;

function errorName(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message.slice(0, 200)}` : String(error);
}

/**
 * One store call bounded by `timeoutMs`, never throwing: a timeout or an error is told to `warn`
 * and answered with `fallback` (the broker then behaves as if the binding were unset).
 */
export function boundedCall(timeoutMs: number, warn: (op: string, error: unknown) => void) {
  return async <R>(op: string, fallback: R, run: () => Promise<R>): Promise<R> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        run(),
        new Promise<R>((_, reject) => {
          timer = setTimeout(() => reject(new Error("timeout")), timeoutMs);
        }),
      ]);
    } catch (error) {
      warn(op, error);
      return fallback;
    } finally {
      clearTimeout(timer);
    }
  };
}
