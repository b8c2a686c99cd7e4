// Model tests of what the broker instances share on Redis (server/kv/shared-limits.ts), against the
// suite's real Redis. Lookup windows (`takeWindow`): the suite's real Redis: two "instances" (connections of their own) take
// places in random keys' windows, give places back, the injected clock moves across window ends,
// and an instance is cut off from Redis for a while (its calls go to a port nothing listens on).
// The model: a count per key and fixed window; a place is granted exactly while the count is below
// the limit, a refusal waits until the window's end, a cut-off instance is told "unavailable" and
// changes nothing. "Not installed" answers: two instances check, store and drop them; an answer
// is found while no drop of its account (or of all) came since it was stored, and an answer whose
// check came before such a drop is never stored.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createLogger } from "../server/log.js";
import { openRedisConnection, type RedisConnection } from "../server/kv/redis-connection.js";
import { openSharedLimits, type SharedLimits, type WindowPlace } from "../server/kv/shared-limits.js";
import { deleteKeysUnder, REDIS_URL } from "./support/redis-url.js";

const WINDOW_MS = 60_000;
const LIMIT = 2;
const KEYS = ["owner:a", "owner:b"] as const;
const PREFIX = `shared-window-model-${randomUUID().slice(0, 8)}`;
const log = createLogger({ level: "fatal" });
const connections: RedisConnection[] = [];
const open = (url: string) => {
  const connection = openRedisConnection(url, { timeoutMs: 300 });
  connections.push(connection);
  return connection;
};

afterAll(async () => {
  for (const connection of connections) connection.close();
  await deleteKeysUnder([PREFIX]);
});

interface Model {
  now: number;
  counts: Map<string, number>;
  down: [boolean, boolean];
  granted: Array<{ slot: string; place: WindowPlace }>;
}
interface World {
  prefix: string;
  live: [SharedLimits, SharedLimits];
  /** The same instances cut off from Redis. */
  cut: [SharedLimits, SharedLimits];
}

const slotOf = (key: string, now: number) => `${key}@${Math.floor(now / WINDOW_MS)}`;

class Take implements fc.AsyncCommand<Model, World> {
  constructor(readonly instance: 0 | 1, readonly key: string) {}
  check = () => true;
  async run(model: Model, world: World) {
    const limits = model.down[this.instance] ? world.cut[this.instance] : world.live[this.instance];
    const answer = await limits.takeWindow(`${world.prefix}:${this.key}`, LIMIT, WINDOW_MS, model.now);
    if (model.down[this.instance]) return void expect(answer).toBe("unavailable");
    const slot = slotOf(this.key, model.now);
    const used = model.counts.get(slot) ?? 0;
    if (used < LIMIT) {
      expect(answer).toEqual({ refund: expect.any(Function) });
      model.counts.set(slot, used + 1);
      model.granted.push({ slot, place: answer as WindowPlace });
    } else {
      expect(answer).toEqual({ retryAfterMs: (Math.floor(model.now / WINDOW_MS) + 1) * WINDOW_MS - model.now });
    }
  }
  toString = () => `take(${this.instance}, ${this.key})`;
}

class Refund implements fc.AsyncCommand<Model, World> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) => model.granted.length > 0;
  async run(model: Model) {
    const [given] = model.granted.splice(this.pick % model.granted.length, 1);
    await given!.place.refund();
    model.counts.set(given!.slot, model.counts.get(given!.slot)! - 1);
  }
  toString = () => `refund(${this.pick})`;
}

class Advance implements fc.AsyncCommand<Model, World> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model) {
    model.now += this.ms;
  }
  toString = () => `advance(${this.ms})`;
}

class Cut implements fc.AsyncCommand<Model, World> {
  constructor(readonly instance: 0 | 1) {}
  check = () => true;
  async run(model: Model) {
    model.down[this.instance] = !model.down[this.instance];
  }
  toString = () => `toggle-cut(${this.instance})`;
}

describe("shared lookup windows (model, real Redis)", () => {
  it("two instances never hold more than the limit in a window; refunds free places; a cut-off instance changes nothing", async () => {
    const live: [SharedLimits, SharedLimits] = [0, 1].map(() => openSharedLimits(open(REDIS_URL), { url: REDIS_URL, prefix: PREFIX, log, timeoutMs: 300 })) as [SharedLimits, SharedLimits];
    // A port nothing listens on: every call fails at once (connection refused), as with Redis stopped.
    const nowhere = "redis://127.0.0.1:1";
    const cut: [SharedLimits, SharedLimits] = [0, 1].map(() => openSharedLimits(open(nowhere), { url: nowhere, prefix: PREFIX, log, timeoutMs: 300 })) as [SharedLimits, SharedLimits];
    const commands = [
      fc.tuple(fc.constantFrom<0 | 1>(0, 1), fc.constantFrom(...KEYS)).map(([instance, key]) => new Take(instance, key)),
      fc.tuple(fc.constantFrom<0 | 1>(0, 1), fc.constantFrom(...KEYS)).map(([instance, key]) => new Take(instance, key)),
      fc.nat(20).map((pick) => new Refund(pick)),
      fc.oneof(fc.integer({ min: 0, max: 20_000 }), fc.constant(WINDOW_MS)).map((ms) => new Advance(ms)),
      fc.constantFrom<0 | 1>(0, 1).map((instance) => new Cut(instance)),
    ];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: WINDOW_MS - 1 }), fc.commands(commands, { maxCommands: 60, size: "+1" }), async (start, cmds) => {
        run += 1;
        // Each run its own keys (runs do not see each other's counts).
        const world: World = { prefix: `run-${run}`, live, cut };
        await fc.asyncModelRun(() => ({ model: { now: 1_000 * WINDOW_MS + start, counts: new Map(), down: [false, false] as [boolean, boolean], granted: [] }, real: world }), cmds);
      }),
      { numRuns: 60 },
    );
  }, 60_000);
});

interface AnswersModel {
  /** Keys answered "not installed" now, with their owner. */
  stored: Map<string, number>;
  /** Drops so far, per owner and of all. */
  drops: Map<number | "all", number>;
  /** A check that found nothing, per instance and key: the epoch it read and the drops it saw. */
  pending: Map<string, { epoch: string; seen: number }>;
}
interface AnswersWorld {
  prefix: string;
  live: [SharedLimits, SharedLimits];
}
const ANSWER_KEYS: ReadonlyArray<[string, number]> = [["k1", 1], ["k2", 1], ["k3", 2]];
const dropsSeen = (model: AnswersModel, owner: number) => (model.drops.get(owner) ?? 0) + (model.drops.get("all") ?? 0);

class Check implements fc.AsyncCommand<AnswersModel, AnswersWorld> {
  constructor(readonly instance: 0 | 1, readonly key: number) {}
  check = () => true;
  async run(model: AnswersModel, world: AnswersWorld) {
    const [key, owner] = ANSWER_KEYS[this.key]!;
    const answer = await world.live[this.instance].notInstalled(`${world.prefix}:${key}`, owner);
    if (model.stored.has(key)) return void expect(answer).toEqual({ remainingMs: expect.any(Number) });
    expect(answer).toEqual({ epoch: expect.any(String) });
    model.pending.set(`${this.instance}:${key}`, { epoch: (answer as { epoch: string }).epoch, seen: dropsSeen(model, owner) });
  }
  toString = () => `check(${this.instance}, ${ANSWER_KEYS[this.key]![0]})`;
}

class Store implements fc.AsyncCommand<AnswersModel, AnswersWorld> {
  constructor(readonly instance: 0 | 1, readonly key: number) {}
  check = (model: Readonly<AnswersModel>) => model.pending.has(`${this.instance}:${ANSWER_KEYS[this.key]![0]}`);
  async run(model: AnswersModel, world: AnswersWorld) {
    const [key, owner] = ANSWER_KEYS[this.key]!;
    const pending = model.pending.get(`${this.instance}:${key}`)!;
    model.pending.delete(`${this.instance}:${key}`);
    await world.live[this.instance].addNotInstalled(`${world.prefix}:${key}`, owner, pending.epoch, 60_000);
    if (pending.seen === dropsSeen(model, owner)) model.stored.set(key, owner);
  }
  toString = () => `store(${this.instance}, ${ANSWER_KEYS[this.key]![0]})`;
}

class DropAnswers implements fc.AsyncCommand<AnswersModel, AnswersWorld> {
  constructor(readonly instance: 0 | 1, readonly owner: number | undefined) {}
  check = () => true;
  async run(model: AnswersModel, world: AnswersWorld) {
    await world.live[this.instance].dropOwner(this.owner);
    model.drops.set(this.owner ?? "all", (model.drops.get(this.owner ?? "all") ?? 0) + 1);
    for (const [key, owner] of model.stored) if (this.owner === undefined || owner === this.owner) model.stored.delete(key);
  }
  toString = () => `drop(${this.instance}, ${this.owner ?? "all"})`;
}

describe("shared not-installed answers (model, real Redis)", () => {
  it("an answer holds on both instances until a drop of its account from either; a check before a drop never stores", async () => {
    const live: [SharedLimits, SharedLimits] = [0, 1].map(() => openSharedLimits(open(REDIS_URL), { url: REDIS_URL, prefix: PREFIX, log, timeoutMs: 300 })) as [SharedLimits, SharedLimits];
    const instance = fc.constantFrom<0 | 1>(0, 1);
    const key = fc.nat(ANSWER_KEYS.length - 1);
    const commands = [
      fc.tuple(instance, key).map(([at, k]) => new Check(at, k)),
      fc.tuple(instance, key).map(([at, k]) => new Store(at, k)),
      fc.tuple(instance, key).map(([at, k]) => new Store(at, k)),
      fc.tuple(instance, fc.option(fc.constantFrom(1, 2), { nil: undefined, freq: 4 })).map(([at, owner]) => new DropAnswers(at, owner)),
    ];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 50, size: "+1" }), async (cmds) => {
        run += 1;
        const world: AnswersWorld = { prefix: `answers-${run}`, live };
        await fc.asyncModelRun(() => ({ model: { stored: new Map(), drops: new Map(), pending: new Map() }, real: world }), cmds);
      }),
      { numRuns: 60 },
    );
  }, 60_000);
});
