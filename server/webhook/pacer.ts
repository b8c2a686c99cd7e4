import type { Redis } from "ioredis";

export const HOUR_MS = 3_600_000;
/**
 * The hour's budget frees a little after an hour: the platform times a call when it arrives, and
 * the call that opened the hour may have arrived later after its slot than the one closing it.
 */
export const HOUR_MARGIN_MS = 10_000;

/** How fast one installation may go: strict spacing per minute, and a cap in any hour. */
export interface PaceRates {
  perMinute: number;
  perHour: number;
}

/**
 * Where the pace of each installation is kept: the slots handed out within the last hour (and its
 * margin), newest first; older ones can no longer bind. A slot is the latest of now, the last slot +
 * the interval, `notBefore` (a platform's `retry-after`) and, once `perHour` slots fall within the
 * window, a window after the `perHour`-th newest; handing it out records it, so every later caller
 * waits behind it. Strict spacing, no burst: at 60 a minute, one call a second, and at 500 an hour
 * the 501st call waits until an hour after the first (GitHub's content-creation limits: 80 a
 * minute, 500 an hour). Kept by time, not by count, so a budget raised between calls still sees
 * every slot of the hour.
 */
export interface PaceStore {
  /**
   * The next slot of `key` (ms since the epoch), reserved if it is not after `latest`; a later one
   * is only told, not recorded, so a call that will not wait that long takes nothing from the hour.
   */
  reserve(key: string, intervalMs: number, perHour: number, notBefore: number, now: number, latest?: number): Promise<number>;
}

/** Slots kept per installation at most (a budget above it is not held to the hour). */
const MAX_KEPT_SLOTS = 10_000;

/** The pure rule both stores apply; `recent` is newest first. */
export function nextSlot(recent: readonly number[], intervalMs: number, perHour: number, notBefore: number, now: number): number {
  const last = recent[0];
  const hourAgo = recent.length >= perHour ? recent[perHour - 1]! + HOUR_MS + HOUR_MARGIN_MS : 0; // perHour ≥ 1
  return Math.max(now, last === undefined ? 0 : last + intervalMs, notBefore, hourAgo);
}

/** This process only (the in-process queue). Installations idle for an hour are dropped. */
export function memoryPaceStore(): PaceStore {
  const slots = new Map<string, number[]>();
  const window = HOUR_MS + HOUR_MARGIN_MS;
  return {
    async reserve(key, intervalMs, perHour, notBefore, now, latest = Number.POSITIVE_INFINITY) {
      const recent = (slots.get(key) ?? []).filter((at) => at > now - window);
      const slot = nextSlot(recent, intervalMs, perHour, notBefore, now);
      if (slot > latest) return slot;
      recent.unshift(slot);
      if (recent.length > MAX_KEPT_SLOTS) recent.length = MAX_KEPT_SLOTS;
      slots.set(key, recent);
      if (slots.size > 10_000) for (const [k, list] of slots) if (list[0]! <= now - window) slots.delete(k);
      return slot;
    },
  };
}

// The same rule in one script, so instances sharing the queue's Redis never hand out one slot twice.
const RESERVE = `
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local notBefore = tonumber(ARGV[3])
local perHour = tonumber(ARGV[4])
local latest = tonumber(ARGV[5])
local window = ${HOUR_MS + HOUR_MARGIN_MS}
while true do
  local oldest = tonumber(redis.call('LINDEX', KEYS[1], -1))
  if oldest and oldest <= now - window then redis.call('RPOP', KEYS[1]) else break end
end
local slot = now
local last = tonumber(redis.call('LINDEX', KEYS[1], 0))
if last and last + interval > slot then slot = last + interval end
if notBefore > slot then slot = notBefore end
local nth = tonumber(redis.call('LINDEX', KEYS[1], perHour - 1))
if nth and nth + window > slot then slot = nth + window end
if latest >= 0 and slot > latest then return slot end
redis.call('LPUSH', KEYS[1], string.format('%.0f', slot))
redis.call('LTRIM', KEYS[1], 0, ${MAX_KEPT_SLOTS - 1})
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', slot - now + window))
return slot
`;

/**
 * Shared by every instance on the queue's Redis: one pace per installation, whoever runs the job.
 * The slots live in a list (`<prefix>:pace-slots:<key>`); brokers before the hourly cap kept a
 * string at `<prefix>:pace:<key>`, which this leaves alone.
 */
export function redisPaceStore(redis: Redis, prefix: string): PaceStore {
  return {
    async reserve(key, intervalMs, perHour, notBefore, now, latest = Number.POSITIVE_INFINITY) {
      // -1: no latest (Lua numbers cannot carry Infinity through ARGV).
      const bound = Number.isFinite(latest) ? Math.floor(latest) : -1;
      const slot = await redis.eval(RESERVE, 1, `${prefix}:pace-slots:${key}`, Math.round(now), Math.ceil(intervalMs), Math.round(notBefore), Math.min(MAX_KEPT_SLOTS + 1, Math.max(1, Math.floor(perHour))), bound);
      return Number(slot);
    },
  };
}

/** Longest single sleep while waiting for a slot: a stopping process notices within this. */
export const WAIT_STEP_MS = 1_000;

export interface Pacer {
  /**
   * Waits for this installation's next update-branch slot (not before `notBefore`), or until
   * `stopped()` turns true (checked at least every WAIT_STEP_MS). A slot more than `maxWaitMs`
   * away is not taken: the answer is then "too late" and the time it would have been, and the
   * caller gives up on the call (a job must not sit on a queue slot for the rest of an hour).
   */
  wait(installationId: number, rates: PaceRates, options?: { notBefore?: number; stopped?: () => boolean; maxWaitMs?: number }): Promise<{ paced: true } | { paced: false; slotAt: number }>;
}

export function createPacer(deps: { store: PaceStore; now: () => number; sleep: (ms: number) => Promise<void> }): Pacer {
  return {
    async wait(installationId, rates, { notBefore = 0, stopped = () => false, maxWaitMs = Number.POSITIVE_INFINITY } = {}) {
      const now = deps.now();
      const slot = await deps.store.reserve(`installation:${installationId}`, Math.max(1, Math.ceil(60_000 / rates.perMinute)), rates.perHour, notBefore, now, now + maxWaitMs);
      if (slot > now + maxWaitMs) return { paced: false, slotAt: slot };
      for (let left = slot - deps.now(); left > 0 && !stopped(); left = slot - deps.now()) await deps.sleep(Math.min(left, WAIT_STEP_MS));
      return { paced: true };
    },
  };
}
