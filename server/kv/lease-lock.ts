import { randomUUID } from "node:crypto";
import type { Logger } from "../log.js";
import { redactUrl } from "../../shared/redact-url.js";
import { boundedCall, throttledWarning, type StoreCallOutcome } from "./bounded-call.js";
import { openRedisConnection, type RedisConnection } from "./redis-connection.js";

/**
 * A lock with a lease in Redis, so that one of several broker instances does a piece of work the
 * others then read (the /releases crawl). `SET key token NX PX lease` takes it; only the holder
 * (same token) renews or releases it, each a small Lua compare-and-act; a holder that dies stops
 * renewing and its lease runs out. Every call is bounded and never throws: Redis down →
 * "unavailable", and the caller goes on as if there were no other instance (logged).
 * https://redis.io/docs/latest/develop/use/patterns/distributed-locks/ (single instance)
 */
export interface LeaseLock {
  /** A held lease, "taken" while another holder's lease runs, or "unavailable" (Redis down). */
  acquire(key: string, leaseMs: number): Promise<Lease | "taken" | "unavailable">;
  /** Whether someone holds `key` now (undefined: Redis did not answer). */
  held(key: string): Promise<boolean | undefined>;
  close(): Promise<void>;
}

export interface Lease {
  /** Extends the lease; false once it was lost (expired and maybe taken by another). */
  renew(leaseMs: number): Promise<boolean>;
  /** Deletes the key if it still holds this lease. */
  release(): Promise<void>;
}

const RENEW = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

/** A lease lock on `connection` (the store registry's for that URL), or on a connection of its own, closed with it. */
export function openLeaseLock(url: string, options: { log: Logger; timeoutMs: number; countCall?: (outcome: StoreCallOutcome) => void }, connection?: RedisConnection): LeaseLock {
  const own = connection ? undefined : openRedisConnection(url, options);
  const { redis } = (connection ?? own)!;
  const warn = throttledWarning((op, error) => options.log.warn({ store: redactUrl(url), op, err: error instanceof Error ? error.name : "unknown" }, "lease lock unavailable; going on without it"));
  own?.redis.on("error", (error: unknown) => warn("event", error));

  const call = boundedCall(options.timeoutMs, warn, (connection ?? own)!.breaker, options.countCall);
  // A first call connects: the connection counts against the call's bound.
  const bounded = <R>(op: string, fallback: R, run: () => Promise<R>): Promise<R> =>
    call(op, fallback, async () => {
      await (connection ?? own)!.ready();
      return run();
    });

  return {
    acquire: (key, leaseMs) =>
      bounded<Lease | "taken" | "unavailable">("acquire", "unavailable", async () => {
        const token = randomUUID();
        const taken = await redis.set(key, token, "PX", leaseMs, "NX");
        if (taken !== "OK") return "taken";
        return {
          renew: (ms) => bounded("renew", false, async () => Number(await redis.eval(RENEW, 1, key, token, String(ms))) === 1),
          release: () => bounded("release", undefined, async () => void (await redis.eval(RELEASE, 1, key, token))),
        };
      }),
    held: (key) => bounded<boolean | undefined>("held", undefined, async () => (await redis.exists(key)) === 1),
    close: async () => {
      own?.close();
    },
  };
}
