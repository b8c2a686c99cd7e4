// Model-based tests (fast-check commands) of the two state machines behind issue 24 item 2, under a
// fake clock: the not-installed cache (server/installation/not-installed-cache.ts) and the per-owner
// lookup limiter (server/github/owner-lookup-limiter.ts). The HTTP side is
// test/hardening-negative-lookups.test.ts.
// Not-installed cache, against a model keeping every answer with its time:
// - a key is "not installed" exactly when it was added less than the lifetime ago, no drop for its
//   owner (or for everyone) came since, and no lookup that began before a drop added it;
// - keys are distinct per repository id: another repository of the same owner is never hit;
// - at most maxEntries are kept (the oldest go first).
// Owner limiter, against a model keeping every owner's lookups in flight and those that found
// nothing:
// - an owner's lookups that found nothing in the window plus those in flight never exceed its
//   share; another owner's never count, nor its own that found the App installed;
// - a caller is let through exactly when they fit, told to wait exactly when only lookups in
//   flight are in the way, and refused exactly when the share is spent on lookups that found
//   nothing, with the time until the oldest of them leaves the window (whole seconds, at least 1).
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createNotInstalledCache, type NotInstalledCache } from "../server/installation/not-installed-cache.js";
import { createOwnerLookupLimiter, OWNER_SHARE, TARGET_LOOKUP_SHARE, type LookupSlot, type OwnerLookupLimiter } from "../server/github/owner-lookup-limiter.js";

const START = 1_800_000_000_000;
const TTL_MS = 60_000;
const MAX = 6;
const OWNERS = [1, 2, 3] as const;
const key = (repository: number, owner: number) => `api\u0000app\u0000id:${repository}:${owner}`;

interface CacheWorld {
  clock: number;
  cache: NotInstalledCache;
}
interface CacheModel {
  /** Key → when it was added, and whose. */
  entries: Map<string, { at: number; owner: number }>;
  /** Lookups started (generation taken), not yet answered. */
  started: Array<{ key: string; owner: number; stale: boolean }>;
}

class StartLookup implements fc.Command<CacheModel, CacheWorld> {
  constructor(readonly repository: number, readonly owner: number) {}
  check = () => true;
  run(model: CacheModel, world: CacheWorld) {
    model.started.push({ key: key(this.repository, this.owner), owner: this.owner, stale: false });
    generations.push(world.cache.generation);
  }
  toString = () => `start(${this.repository}, ${this.owner})`;
}
/** The generations the world handed out, in the order of model.started. */
let generations: NotInstalledCache["generation"][] = [];

class AnswerNotInstalled implements fc.Command<CacheModel, CacheWorld> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<CacheModel>) => model.started.length > 0;
  run(model: CacheModel, world: CacheWorld) {
    const at = this.pick % model.started.length;
    const [lookup] = model.started.splice(at, 1);
    const [generation] = generations.splice(at, 1);
    world.cache.add(lookup!.key, lookup!.owner, generation!);
    if (!lookup!.stale) {
      model.entries.delete(lookup!.key);
      // Expired entries go first, then the oldest, as in the cache.
      for (const [old, entry] of model.entries) {
        if (entry.at + TTL_MS > world.clock && model.entries.size < MAX) break;
        model.entries.delete(old);
      }
      model.entries.set(lookup!.key, { at: world.clock, owner: lookup!.owner });
    }
    checkAll(model, world);
  }
  toString = () => `answer(${this.pick})`;
}

class Drop implements fc.Command<CacheModel, CacheWorld> {
  constructor(readonly owner: number | undefined) {}
  check = () => true;
  run(model: CacheModel, world: CacheWorld) {
    world.cache.dropOwner(this.owner);
    for (const [k, entry] of model.entries) if (this.owner === undefined || entry.owner === this.owner) model.entries.delete(k);
    // A lookup begun before any drop may hide what the delivery announced: it is not kept.
    for (const lookup of model.started) lookup.stale = true;
    checkAll(model, world);
  }
  toString = () => `drop(${this.owner ?? "all"})`;
}

class AdvanceCache implements fc.Command<CacheModel, CacheWorld> {
  constructor(readonly ms: number) {}
  check = () => true;
  run(model: CacheModel, world: CacheWorld) {
    world.clock += this.ms;
    checkAll(model, world);
  }
  toString = () => `advance(${this.ms})`;
}

function checkAll(model: CacheModel, world: CacheWorld): void {
  for (const repository of [10, 11, 12, 13]) {
    for (const owner of OWNERS) {
      const k = key(repository, owner);
      const entry = model.entries.get(k);
      expect({ k, has: world.cache.has(k) }).toEqual({ k, has: entry !== undefined && world.clock < entry.at + TTL_MS });
    }
  }
  expect(world.cache.size).toBeLessThanOrEqual(MAX);
}

describe("the not-installed cache", () => {
  it("answers 'not installed' exactly while the model says so", () => {
    const commands = [
      fc.tuple(fc.constantFrom(10, 11, 12, 13), fc.constantFrom(...OWNERS)).map(([repository, owner]) => new StartLookup(repository, owner)),
      fc.nat(10).map((pick) => new AnswerNotInstalled(pick)),
      fc.option(fc.constantFrom(...OWNERS), { nil: undefined, freq: 4 }).map((owner) => new Drop(owner)),
      fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.constantFrom(TTL_MS - 1, TTL_MS, TTL_MS + 1)).map((ms) => new AdvanceCache(ms)),
    ];
    fc.assert(
      fc.property(fc.commands(commands, { maxCommands: 60 }), (cmds) => {
        generations = [];
        const world: CacheWorld = { clock: START, cache: undefined as unknown as NotInstalledCache };
        world.cache = createNotInstalledCache({ now: () => world.clock, ttlMs: TTL_MS, maxEntries: MAX });
        fc.modelRun(() => ({ model: { entries: new Map(), started: [] }, real: world }), cmds);
      }),
      { numRuns: 300 },
    );
  });
});

const WINDOW_MS = 60_000;

interface LimiterWorld {
  clock: number;
  budget: number;
  /** Each key's part of the budget: an owner's (installation lookups) or a calling repository's (its requests' `repositories`). */
  share: number;
  limiter: OwnerLookupLimiter;
  /** Lookups let through and not settled yet. */
  out: Array<{ owner: number; slot: LookupSlot }>;
}
interface LimiterModel {
  /** Owner → when its lookups that found nothing settled. */
  spent: Map<number, number[]>;
  /** Owner → lookups in flight. */
  inFlight: Map<number, number>;
}

const shareOf = (world: LimiterWorld) => Math.max(1, Math.floor(world.budget * world.share));
const recentOf = (model: LimiterModel, owner: number, clock: number) => (model.spent.get(owner) ?? []).filter((at) => at > clock - WINDOW_MS);

class Take implements fc.Command<LimiterModel, LimiterWorld> {
  constructor(readonly owner: number) {}
  check = () => true;
  run(model: LimiterModel, world: LimiterWorld) {
    const recent = recentOf(model, this.owner, world.clock);
    const inFlight = model.inFlight.get(this.owner) ?? 0;
    const share = shareOf(world);
    const answer = world.limiter.tryTake(String(this.owner));
    if (recent.length >= share) {
      // The share is spent on lookups that found nothing: refused, until the oldest of them leaves.
      const freedAt = recent[recent.length - share]! + WINDOW_MS;
      expect(answer).toEqual({ retryAfterSeconds: Math.max(1, Math.ceil((freedAt - world.clock) / 1000)) });
    } else if (recent.length + inFlight >= share) {
      // The rest of the share is out: wait for one of them.
      expect(answer).toBeUndefined();
    } else {
      expect(answer).toEqual({ settle: expect.any(Function) });
      world.out.push({ owner: this.owner, slot: answer as LookupSlot });
      model.inFlight.set(this.owner, inFlight + 1);
    }
    checkCounts(model, world);
  }
  toString = () => `take(${this.owner})`;
}

/** Safety: what the limiter counts is every owner's own, exactly; never more lets through than the share allows. */
function checkCounts(model: LimiterModel, world: LimiterWorld): void {
  for (const owner of OWNERS) {
    expect({ owner, used: world.limiter.used(String(owner)), inFlight: world.limiter.inFlight(String(owner)) }).toEqual({
      owner,
      used: recentOf(model, owner, world.clock).length,
      inFlight: model.inFlight.get(owner) ?? 0,
    });
  }
}

/** A lookup ends: the App found (not counted) or not (counted); settling twice changes nothing. */
class Settle implements fc.Command<LimiterModel, LimiterWorld> {
  constructor(readonly pick: number, readonly found: boolean) {}
  check = () => true;
  run(model: LimiterModel, world: LimiterWorld) {
    if (world.out.length === 0) return;
    const [lookup] = world.out.splice(this.pick % world.out.length, 1);
    lookup!.slot.settle(this.found);
    lookup!.slot.settle(!this.found);
    model.inFlight.set(lookup!.owner, model.inFlight.get(lookup!.owner)! - 1);
    if (!this.found) model.spent.set(lookup!.owner, [...(model.spent.get(lookup!.owner) ?? []), world.clock]);
    checkCounts(model, world);
  }
  toString = () => `settle(${this.pick}, ${this.found ? "found" : "not found"})`;
}

class AdvanceLimiter implements fc.Command<LimiterModel, LimiterWorld> {
  constructor(readonly ms: number) {}
  check = () => true;
  run(model: LimiterModel, world: LimiterWorld) {
    world.clock += this.ms;
    checkCounts(model, world);
  }
  toString = () => `advance(${this.ms})`;
}

class SetBudget implements fc.Command<LimiterModel, LimiterWorld> {
  constructor(readonly budget: number) {}
  check = () => true;
  run(_model: LimiterModel, world: LimiterWorld) {
    world.budget = this.budget;
  }
  toString = () => `budget(${this.budget})`;
}

describe("the per-owner lookup limiter", () => {
  it("lets a key's lookups through while those that found nothing and those in flight fit its share (an owner's tenth, or a calling repository's fiftieth); refuses once the share is spent on nothing, with the exact wait", () => {
    const commands = [
      fc.constantFrom(...OWNERS).map((owner) => new Take(owner)),
      fc.constantFrom(...OWNERS).map((owner) => new Take(owner)),
      fc.tuple(fc.nat(20), fc.boolean()).map(([pick, found]) => new Settle(pick, found)),
      fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.constantFrom(WINDOW_MS - 1, WINDOW_MS, 30_000)).map((ms) => new AdvanceLimiter(ms)),
      fc.constantFrom(0, 20, 30, 45, 100, 250, 900).map((budget) => new SetBudget(budget)),
    ];
    fc.assert(
      fc.property(fc.commands(commands, { maxCommands: 80 }), fc.constantFrom(OWNER_SHARE, TARGET_LOOKUP_SHARE), (cmds, share) => {
        const world: LimiterWorld = { clock: START, budget: 30, share, limiter: undefined as unknown as OwnerLookupLimiter, out: [] };
        world.limiter = createOwnerLookupLimiter({ now: () => world.clock, windowMs: WINDOW_MS, pointsPerWindow: () => world.budget, ...(share === OWNER_SHARE ? {} : { share }) });
        fc.modelRun(() => ({ model: { spent: new Map(), inFlight: new Map() }, real: world }), cmds);
      }),
      { numRuns: 300 },
    );
  });

  it("a caller waiting for the owner's lookups in flight is let through when one finds the App, refused when the share is then spent", async () => {
    let clock = START;
    const limiter = createOwnerLookupLimiter({ now: () => clock, windowMs: WINDOW_MS, pointsPerWindow: () => 20 }); // a share of 2
    const first = (await limiter.take("o")) as LookupSlot;
    const second = (await limiter.take("o")) as LookupSlot;
    const third = limiter.take("o");
    const fourth = limiter.take("o");
    first.settle(true); // found: its place is free again
    const thirdSlot = (await third) as LookupSlot;
    expect(thirdSlot).toEqual({ settle: expect.any(Function) });
    second.settle(false);
    clock += 10_000;
    thirdSlot.settle(false); // two found nothing: the share is spent
    expect(await fourth).toEqual({ retryAfterSeconds: 50 }); // until the first of them leaves the window
  });
});
