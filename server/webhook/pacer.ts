import type { Redis } from "ioredis";

/**
 * Where the pace of each installation is kept: the time of the last slot handed out. A slot is
 * the later of now, the last slot + the interval, and `notBefore` (a platform's `retry-after`);
 * handing it out moves the last slot to it, so every later caller waits behind it. Strict spacing,
 * no burst: at 60 a minute, one call a second.
 */
export interface PaceStore {
  /** Reserves the next slot of `key`; returns its time (ms since the epoch). */
  reserve(key: string, intervalMs: number, notBefore: number, now: number): Promise<number>;
}

/** The pure rule both stores apply. */
export function nextSlot(last: number | undefined, intervalMs: number, notBefore: number, now: number): number {
  return Math.max(now, last === undefined ? 0 : last + intervalMs, notBefore);
}

/** This process only (the in-process queue). Entries idle for a minute are dropped. */
export function memoryPaceStore(): PaceStore {
  const last = new Map<string, number>();
  return {
    async reserve(key, intervalMs, notBefore, now) {
      const slot = nextSlot(last.get(key), intervalMs, notBefore, now);
      last.set(key, slot);
      if (last.size > 10_000) for (const [k, t] of last) if (t < now - 60_000) last.delete(k);
      return slot;
    },
  };
}

const RESERVE = `
local last = tonumber(redis.call('GET', KEYS[1]))
local now = tonumber(ARGV[1])
local slot = now
if last and last + tonumber(ARGV[2]) > slot then slot = last + tonumber(ARGV[2]) end
if tonumber(ARGV[3]) > slot then slot = tonumber(ARGV[3]) end
redis.call('SET', KEYS[1], string.format('%.0f', slot), 'PX', string.format('%.0f', math.max(60000, slot - now + 60000)))
return slot
`;

/** Shared by every instance on the queue's Redis: one pace per installation, whoever runs the job. */
export function redisPaceStore(redis: Redis, prefix: string): PaceStore {
  return {
    async reserve(key, intervalMs, notBefore, now) {
      const slot = await redis.eval(RESERVE, 1, `${prefix}:pace:${key}`, Math.round(now), Math.ceil(intervalMs), Math.round(notBefore));
      return Number(slot);
    },
  };
}

export interface Pacer {
  /** Waits for this installation's next update-branch slot (not before `notBefore`). */
  wait(installationId: number, perMinute: number, notBefore?: number): Promise<void>;
}

export function createPacer(deps: { store: PaceStore; now: () => number; sleep: (ms: number) => Promise<void> }): Pacer {
  return {
    async wait(installationId, perMinute, notBefore = 0) {
      const slot = await deps.store.reserve(`installation:${installationId}`, Math.max(1, Math.ceil(60_000 / perMinute)), notBefore, deps.now());
      const wait = slot - deps.now();
      if (wait > 0) await deps.sleep(wait);
    },
  };
}
