import type { Logger } from "../log.js";
import { redactUrl } from "../../shared/redact-url.js";
import { boundedCall, throttledWarning, type StoreCallOutcome } from "./bounded-call.js";
import type { RedisConnection } from "./redis-connection.js";

/**
 * The "not installed" answers, the lookup windows and the REST points windows of every broker
 * instance on one Redis (docs/operations.md#caches), so that n instances learn "not installed"
 * once, give an owner one share, not n, and keep the App's points budget together. Each operation is one small Lua script (atomic on the server, one round trip). Every
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
   * Takes `points` of a principal's REST points (the App's, an installation's) in the window every
   * instance shares (docs/operations.md#shared-limits): granted when what all of them hold in the
   * last `windowMs` leaves room within `limit`, or refused with the wait until enough leaves it.
   */
  takePoints(principal: string, points: number, limit: number, windowMs: number, now: number): Promise<SharedPoints | { retryAfterMs: number } | "unavailable">;
  /**
   * Tells `listener` of every drop, from any instance (Redis pub/sub, on a connection of its own),
   * so that each drops its in-process copies too. Drops published while this instance was cut off
   * from Redis are missed: its copies then last their lifetime (a minute), as without a shared store.
   */
  onDrop(listener: (ownerId: number | undefined) => void): void;
  close(): void;
}

/** Points taken in the shared window: settled once the call is done (sent) or never went out (refunded). */
export interface SharedPoints {
  settle(sent: boolean, now: number): Promise<void>;
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
// The points window: one hash per principal, a field per slice (a sixtieth of the window) holding
// the points taken in it. KEYS: the hash. ARGV: this slice, the oldest slice still counted, points,
// limit, expiry. Counted: the slices from the oldest on (a window and one slice), so points stay at
// least a window after the slice they are in. Refused: {0, the slice whose leaving makes room}.
const TAKE_POINTS = `
local all = redis.call("hgetall", KEYS[1])
local oldest = tonumber(ARGV[2])
local used = 0
local slices = {}
for i = 1, #all, 2 do
  local slice = tonumber(all[i])
  local points = tonumber(all[i + 1])
  if slice < oldest or points <= 0 then redis.call("hdel", KEYS[1], all[i])
  else used = used + points; slices[#slices + 1] = {slice, points} end
end
local over = used + tonumber(ARGV[3]) - tonumber(ARGV[4])
if over > 0 then
  table.sort(slices, function(a, b) return a[1] < b[1] end)
  for _, entry in ipairs(slices) do
    over = over - entry[2]
    if over <= 0 then return {0, entry[1]} end
  end
  return {0, -1}
end
redis.call("hincrby", KEYS[1], ARGV[1], ARGV[3])
redis.call("pexpire", KEYS[1], ARGV[5])
return {1, 0}`;
// KEYS: the hash. ARGV: the slice taken in, the slice it settles in (0: refunded), points, expiry.
// A sent call's points move to the slice of its answer: they stay a window after it.
const SETTLE_POINTS = `
if redis.call("hincrby", KEYS[1], ARGV[1], -tonumber(ARGV[3])) <= 0 then redis.call("hdel", KEYS[1], ARGV[1]) end
if ARGV[2] ~= "0" then redis.call("hincrby", KEYS[1], ARGV[2], ARGV[3]) end
redis.call("pexpire", KEYS[1], ARGV[4])
return 1`;
/** Slices of the shared points window. */
const POINT_SLICES = 60;
const REFUND = `if redis.call("exists", KEYS[1]) == 1 then return redis.call("decr", KEYS[1]) end return 0`;
/** Epoch keys outlive every entry stored under them (a minute) by far; a day keeps them bounded. */
const EPOCH_TTL_MS = 24 * 60 * 60_000;

/** `prefix`: the keys' (e.g. `tokensmith`, or WEBHOOK_QUEUE's `?prefix=`). */
export function openSharedLimits(connection: RedisConnection, options: { url: string; prefix: string; log: Logger; timeoutMs: number; countCall?: (outcome: StoreCallOutcome) => void }): SharedLimits {
  const { redis } = connection;
  const warn = throttledWarning((op, error) =>
    options.log.warn({ store: redactUrl(options.url), op, err: error instanceof Error ? error.name : "unknown" }, "shared limits unavailable; this instance keeps to its own"),
  );
  // The connection's breaker: a black-holed Redis costs one call one bound, then is skipped for a
  // few seconds (docs/operations.md#redis-outages), the points window on every mint included.
  const call = boundedCall(options.timeoutMs, warn, connection.breaker, options.countCall);
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
    takePoints: (principal, points, limit, windowMs, now) =>
      bounded<SharedPoints | { retryAfterMs: number } | "unavailable">("points-window", "unavailable", async () => {
        const sliceMs = windowMs / POINT_SLICES;
        const hash = `${p}:points:${principal}`;
        const slice = Math.floor(now / sliceMs);
        const expiry = String(Math.ceil(windowMs * 2 + sliceMs));
        const [granted, leaving] = (await redis.eval(TAKE_POINTS, 1, hash, String(slice), String(slice - POINT_SLICES), String(points), String(limit), expiry)) as [number, number];
        if (granted !== 1) {
          // The slice `leaving` stops counting once the oldest counted is past it.
          const freeAt = leaving < 0 ? now + sliceMs : (leaving + POINT_SLICES + 1) * sliceMs;
          return { retryAfterMs: Math.max(sliceMs, freeAt - now) };
        }
        let settled = false;
        return {
          settle: (sent, at) => {
            if (settled) return Promise.resolve();
            settled = true;
            const to = sent ? String(Math.max(slice, Math.floor(at / sliceMs))) : "0";
            return bounded("points-settle", undefined, async () => void (await redis.eval(SETTLE_POINTS, 1, hash, String(slice), to, String(points), expiry)));
          },
        };
      }),
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
