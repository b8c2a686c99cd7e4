import type { Logger } from "../log.js";
import { redactUrl } from "../../shared/redact-url.js";
import { boundedCall, throttledWarning } from "./bounded-call.js";
import type { RedisConnection } from "./redis-connection.js";

/**
 * The "not installed" answers and the lookup windows of every broker instance on one Redis
 * (docs/operations.md#caches), so that n instances learn "not installed" once and give an owner one
 * share, not n. Each operation is one small Lua script (atomic on the server, one round trip). Every
 * call is bounded and never throws: Redis down → "unavailable", and the caller keeps to its
 * in-process limits (logged at most every 5 s).
 */
export interface SharedLimits {
  /** A shared "not installed" for `key`: how long it still holds, or the epoch to store a new one under. */
  notInstalled(key: string, ownerId: number): Promise<{ remainingMs: number } | { epoch: string } | "unavailable">;
  /** Remembers "not installed" for `ttlMs`, unless the owner's installations changed since `epoch` was read. */
  addNotInstalled(key: string, ownerId: number, epoch: string, ttlMs: number): Promise<void>;
  /** Drops the shared "not installed" answers of this account (undefined: of every account). */
  dropOwner(ownerId: number | undefined): Promise<void>;
  /**
   * Takes one of `limit` places in `key`'s window of `windowMs` (fixed windows by the clock, `now`
   * its time): granted with a refund (the place given back), or refused with the wait until the window ends.
   */
  takeWindow(key: string, limit: number, windowMs: number, now: number): Promise<WindowPlace | { retryAfterMs: number } | "unavailable">;
  /**
   * Tells `listener` of every drop, from any instance (Redis pub/sub, on a connection of its own),
   * so that each drops its in-process copies too. Drops published while this instance was cut off
   * from Redis are missed: its copies then last their lifetime (a minute), as without a shared store.
   */
  onDrop(listener: (ownerId: number | undefined) => void): void;
  close(): void;
}

export interface WindowPlace {
  /** Gives the place back (the lookup found the App installed). */
  refund(): Promise<void>;
}

// KEYS: entry, global epoch, owner epoch. An entry holds the epochs it was stored under: a drop
// (an INCR of an epoch) makes every older entry of that account miss at once, without a scan.
const CHECK = `
local epoch = (redis.call("get", KEYS[2]) or "0") .. ":" .. (redis.call("get", KEYS[3]) or "0")
if redis.call("get", KEYS[1]) == epoch then
  local left = redis.call("pttl", KEYS[1])
  if left > 0 then return {1, tostring(left)} end
end
return {0, epoch}`;
const ADD = `
local epoch = (redis.call("get", KEYS[2]) or "0") .. ":" .. (redis.call("get", KEYS[3]) or "0")
if epoch ~= ARGV[1] then return 0 end
redis.call("set", KEYS[1], epoch, "PX", ARGV[2])
return 1`;
// KEYS: the window's counter. ARGV: limit, expiry. INCR only below the limit (no overshoot).
const TAKE = `
local used = tonumber(redis.call("get", KEYS[1]) or "0")
if used >= tonumber(ARGV[1]) then return 0 end
redis.call("incr", KEYS[1])
redis.call("pexpire", KEYS[1], ARGV[2])
return 1`;
const REFUND = `if redis.call("exists", KEYS[1]) == 1 then return redis.call("decr", KEYS[1]) end return 0`;
/** Epoch keys outlive every entry stored under them (a minute) by far; a day keeps them bounded. */
const EPOCH_TTL_MS = 24 * 60 * 60_000;

/** `prefix`: the keys' (e.g. `tokensmith`, or WEBHOOK_QUEUE's `?prefix=`). */
export function openSharedLimits(connection: RedisConnection, options: { url: string; prefix: string; log: Logger; timeoutMs: number }): SharedLimits {
  const { redis } = connection;
  const warn = throttledWarning((op, error) =>
    options.log.warn({ store: redactUrl(options.url), op, err: error instanceof Error ? error.name : "unknown" }, "shared limits unavailable; this instance keeps to its own"),
  );
  const call = boundedCall(options.timeoutMs, warn);
  const bounded = <R>(op: string, fallback: R, run: () => Promise<R>): Promise<R> =>
    call(op, fallback, async () => {
      await connection.ready();
      return run();
    });
  const p = options.prefix;
  const entryKey = (key: string) => `${p}:not-installed:${key}`;
  const ownerEpoch = (ownerId: number) => `${p}:not-installed-epoch:${ownerId}`;
  const allEpoch = `${p}:not-installed-epoch`;
  const dropChannel = `${p}:not-installed-drops`;
  let subscriber: RedisConnection["redis"] | undefined;

  return {
    notInstalled: (key, ownerId) =>
      bounded<{ remainingMs: number } | { epoch: string } | "unavailable">("not-installed", "unavailable", async () => {
        const [hit, value] = (await redis.eval(CHECK, 3, entryKey(key), allEpoch, ownerEpoch(ownerId))) as [number, string];
        return hit === 1 ? { remainingMs: Number(value) } : { epoch: value };
      }),
    addNotInstalled: (key, ownerId, epoch, ttlMs) =>
      bounded("not-installed-add", undefined, async () => void (await redis.eval(ADD, 3, entryKey(key), allEpoch, ownerEpoch(ownerId), epoch, String(ttlMs)))),
    dropOwner: (ownerId) =>
      bounded("not-installed-drop", undefined, async () => {
        const epoch = ownerId === undefined ? allEpoch : ownerEpoch(ownerId);
        await redis.multi().incr(epoch).pexpire(epoch, EPOCH_TTL_MS).publish(dropChannel, ownerId === undefined ? "*" : String(ownerId)).exec();
      }),
    onDrop(listener) {
      subscriber = redis.duplicate();
      subscriber.on("error", (error: unknown) => warn("subscribe", error));
      subscriber.on("message", (_channel: string, message: string) => listener(message === "*" ? undefined : Number(message)));
      // Subscribed on every (re)connection: a first attempt may fail while Redis is down.
      const sub = subscriber;
      sub.on("ready", () => void sub.subscribe(dropChannel).catch((error: unknown) => warn("subscribe", error)));
      sub.connect().catch((error: unknown) => warn("subscribe", error));
    },
    close() {
      subscriber?.disconnect();
    },
    takeWindow: (key, limit, windowMs, now) =>
      bounded<WindowPlace | { retryAfterMs: number } | "unavailable">("lookup-window", "unavailable", async () => {
        const window = Math.floor(now / windowMs);
        const counter = `${p}:lookups:${key}:${window}`;
        const endsIn = (window + 1) * windowMs - now;
        // Kept a window past its end, so that a refund after the end finds its own window's counter.
        const taken = Number(await redis.eval(TAKE, 1, counter, String(limit), String(endsIn + windowMs)));
        if (taken !== 1) return { retryAfterMs: endsIn };
        return { refund: () => bounded("lookup-window-refund", undefined, async () => void (await redis.eval(REFUND, 1, counter))) };
      }),
  };
}
