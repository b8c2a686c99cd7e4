// A model-based test of the update-branch pace (server/webhook/pacer.ts): random sequences of slot
// reservations (two installations, a platform's retry-after or none, budgets per minute and per
// hour that an operator may change between calls) and clock moves, run against both stores at once
// — this process's and the one in Redis (a real server the suite starts, its own key prefix per
// run) — and against a model that keeps every slot ever handed out. After every reservation:
// - both stores hand out the same slot, and it is the model's;
// - the slot is not before now, nor before the retry-after;
// - it is at least one interval after the installation's previous slot;
// - in any hour (and its margin) there are never more slots than the hour's budget in force;
// - and it is the earliest time all of that allows (the pace never waits longer than it must);
// - a slot past the caller's latest is told, not taken: nothing is recorded.
// Plus the waiting side: an hour's wait gives way to a stopping process within one step.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { Redis } from "ioredis";
import { createPacer, HOUR_MARGIN_MS, HOUR_MS, memoryPaceStore, redisPaceStore, WAIT_STEP_MS, type PaceStore } from "../server/webhook/pacer.js";
import { REDIS_URL } from "./support/redis-url.js";

const START = 1_800_000_000_000;
const WINDOW = HOUR_MS + HOUR_MARGIN_MS;
let redis: Redis;
const prefixes: string[] = [];

beforeAll(() => {
  redis = new Redis(REDIS_URL);
});
afterAll(async () => {
  for (const prefix of prefixes) {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  await redis.quit();
});

interface World {
  now: number;
  memory: PaceStore;
  redis: PaceStore;
  /** Installation → every slot handed out, oldest first, with the budget it was handed out under. */
  slots: Map<string, Array<{ at: number; perHour: number }>>;
}

/** The model's slot: the earliest time at or after every bound, by brute force over the whole history. */
function modelSlot(history: Array<{ at: number }>, intervalMs: number, perHour: number, notBefore: number, now: number): number {
  let slot = Math.max(now, notBefore, history.length > 0 ? history[history.length - 1]!.at + intervalMs : 0);
  // Move on until fewer than perHour earlier slots fall within the window before it.
  for (;;) {
    const inWindow = history.filter((s) => s.at > slot - WINDOW).sort((a, b) => a.at - b.at);
    if (inWindow.length < perHour) return slot;
    slot = inWindow[inWindow.length - perHour]!.at + WINDOW;
  }
}

class Reserve implements fc.AsyncCommand<World, World> {
  constructor(
    readonly installation: string,
    readonly perMinute: number,
    readonly perHour: number,
    readonly retryAfterMs: number | null,
    /** How long the caller would wait at most (null: any time). */
    readonly maxWaitMs: number | null,
  ) {}
  check() {
    return true;
  }
  async run(_model: World, world: World) {
    const intervalMs = Math.max(1, Math.ceil(60_000 / this.perMinute));
    const notBefore = this.retryAfterMs === null ? 0 : world.now + this.retryAfterMs;
    const history = world.slots.get(this.installation) ?? [];
    const expected = modelSlot(history, intervalMs, this.perHour, notBefore, world.now);
    const latest = this.maxWaitMs === null ? undefined : world.now + this.maxWaitMs;
    const [fromMemory, fromRedis] = await Promise.all([
      world.memory.reserve(this.installation, intervalMs, this.perHour, notBefore, world.now, latest),
      world.redis.reserve(this.installation, intervalMs, this.perHour, notBefore, world.now, latest),
    ]);
    expect(fromRedis).toBe(fromMemory);
    expect(fromMemory).toBe(expected);
    expect(fromMemory).toBeGreaterThanOrEqual(world.now);
    expect(fromMemory).toBeGreaterThanOrEqual(notBefore);
    if (history.length > 0) expect(fromMemory - history[history.length - 1]!.at).toBeGreaterThanOrEqual(intervalMs);
    if (latest !== undefined && fromMemory > latest) return; // told, not taken
    history.push({ at: fromMemory, perHour: this.perHour });
    world.slots.set(this.installation, history);
    expect(history.filter((s) => s.at > fromMemory - WINDOW).length).toBeLessThanOrEqual(this.perHour);
  }
  toString() {
    return `reserve(${this.installation}, ${this.perMinute}/min, ${this.perHour}/h, retry-after ${this.retryAfterMs}, wait at most ${this.maxWaitMs})`;
  }
}

class Advance implements fc.AsyncCommand<World, World> {
  constructor(readonly ms: number) {}
  check() {
    return true;
  }
  async run(_model: World, world: World) {
    world.now += this.ms;
  }
  toString() {
    return `advance(${this.ms} ms)`;
  }
}

describe("update-branch pace: model-based, this process's store and Redis's side by side", () => {
  it("every slot is the model's, in both stores, within the minute's spacing and the hour's budget", async () => {
    const commands = [
      fc.tuple(fc.constantFrom("installation:1", "installation:2"), fc.constantFrom(60, 600, 6000), fc.constantFrom(3, 5, 500), fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: null }), fc.option(fc.constantFrom(0, 1000, 15 * 60_000), { nil: null })).map(([i, m, h, r, w]) => new Reserve(i, m, h, r, w)),
      fc.constantFrom(0, 500, 10_000, 60_000, 20 * 60_000, HOUR_MS, WINDOW + 1).map((ms) => new Advance(ms)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 40 }), async (cmds) => {
        const prefix = `tokensmith-pace-model-${randomUUID()}`;
        prefixes.push(prefix);
        const world: World = { now: START, memory: memoryPaceStore(), redis: redisPaceStore(redis, prefix), slots: new Map() };
        await fc.asyncModelRun(() => ({ model: world, real: world }), cmds);
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});

describe("waiting for a slot", () => {
  it("waits out the whole hour in steps when nothing stops it", async () => {
    let now = START;
    const sleeps: number[] = [];
    const pacer = createPacer({ store: memoryPaceStore(), now: () => now, sleep: async (ms) => void (sleeps.push(ms), (now += ms)) });
    for (let i = 0; i < 2; i += 1) await pacer.wait(7, { perMinute: 60, perHour: 2 });
    const before = now;
    expect(await pacer.wait(7, { perMinute: 60, perHour: 2 })).toEqual({ paced: true });
    expect(now - before).toBeGreaterThanOrEqual(HOUR_MS - 1000);
    expect(Math.max(...sleeps)).toBeLessThanOrEqual(WAIT_STEP_MS);
  });

  it("does not take a slot further away than the caller would wait: told when, nothing recorded, no sleep", async () => {
    let now = START;
    const sleeps: number[] = [];
    const pacer = createPacer({ store: memoryPaceStore(), now: () => now, sleep: async (ms) => void (sleeps.push(ms), (now += ms)) });
    for (let i = 0; i < 2; i += 1) await pacer.wait(7, { perMinute: 60, perHour: 2 });
    const spent = sleeps.length;
    const refused = await pacer.wait(7, { perMinute: 60, perHour: 2 }, { maxWaitMs: 15 * 60_000 });
    expect(refused).toEqual({ paced: false, slotAt: START + HOUR_MS + HOUR_MARGIN_MS });
    expect(sleeps).toHaveLength(spent);
    // Nothing was taken: once the hour has passed, the next call goes at once.
    now = START + HOUR_MS + HOUR_MARGIN_MS;
    const at = now;
    expect(await pacer.wait(7, { perMinute: 60, perHour: 2 }, { maxWaitMs: 15 * 60_000 })).toEqual({ paced: true });
    expect(now).toBe(at);
  });

  it("gives way within one step once the process is stopping", async () => {
    let now = START;
    let stopping = false;
    const pacer = createPacer({
      store: memoryPaceStore(),
      now: () => now,
      sleep: async (ms) => {
        now += ms;
        stopping = true; // SIGTERM arrives during the first step of an hour's wait
      },
    });
    for (let i = 0; i < 2; i += 1) await pacer.wait(7, { perMinute: 60, perHour: 2 });
    const before = now;
    await pacer.wait(7, { perMinute: 60, perHour: 2 }, { stopped: () => stopping });
    expect(now - before).toBeLessThanOrEqual(WAIT_STEP_MS + 1000);
  });
});
