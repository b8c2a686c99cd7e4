// The cache primitive (server/cache/loading-cache.ts) against a model, with fast-check: random
// gets, loads that resolve or fail in any order, invalidations of one key, of a set of keys and of
// all (also while loads are in flight), and clock moves. The rule under test: a load that started
// before an invalidation does not store its result; its callers still get it; a get after the
// invalidation does not share it; a value set with a stamp taken before an invalidation is not
// kept (set, peek and stamp: for values worked out outside a load). Besides: a fresh value costs no load, simultaneous misses share
// one load, a failure is not kept, a value is kept for its own lifetime.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createLoadingCache } from "../server/cache/loading-cache.js";

const KEYS = ["i1/a", "i1/b", "i2/a"] as const;
type Key = (typeof KEYS)[number];

type Op =
  | { kind: "get"; key: Key }
  | { kind: "settle"; pick: number; fail: boolean; lifetime: number }
  | { kind: "invalidate"; key: Key }
  | { kind: "invalidateInstallation"; prefix: "i1/" | "i2/" }
  | { kind: "invalidateIf"; key: Key }
  | { kind: "clear" }
  | { kind: "tick"; ms: number }
  | { kind: "peek"; key: Key }
  | { kind: "stamp" }
  | { kind: "set"; key: Key; lifetime: number; since: number | null };

const key = fc.constantFrom(...KEYS);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("get" as const), key }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("settle" as const), pick: fc.nat(), fail: fc.boolean(), lifetime: fc.integer({ min: 0, max: 2000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("invalidate" as const), key }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("invalidateInstallation" as const), prefix: fc.constantFrom("i1/" as const, "i2/" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("invalidateIf" as const), key }) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: "clear" }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 1500 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("peek" as const), key }) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: "stamp" }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("set" as const), key, lifetime: fc.integer({ min: 0, max: 2000 }), since: fc.option(fc.nat(), { nil: null }) }) },
);

interface Value {
  load: number;
  lifetime: number;
}

/** One load the cache started: the test settles it when the sequence says so. */
interface Load {
  id: number;
  key: Key;
  settle: (outcome: { value: Value } | { error: Error }) => void;
  /** What the cache tells the load: whether its result would still be kept. */
  current: () => boolean;
}

/** What a caller of `get` got, once its promise settled. */
type Outcome = { pending: true } | { value: Value } | { error: string };

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("loading cache (model)", () => {
  it("a load that started before an invalidation never stores its result, in any interleaving", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 50 }), async (ops) => {
        // Not 0: lru-cache reads a start time of 0 as "no lifetime".
        let clock = 1_000_000;
        const cache = createLoadingCache<Value>({ max: 10, now: () => clock });
        const started: Load[] = [];
        const pending: Load[] = [];

        // The model.
        const kept = new Map<Key, { value: Value; freshUntil: number }>();
        const generation = new Map<Key, number>();
        let epoch = 0;
        /** The load a new get for the key shares, if any. */
        const shared = new Map<Key, number>();
        /** Per load: the generation it started under, and what each of its callers must get. */
        const loads = new Map<number, { key: Key; generation: number; epoch: number; callers: Outcome[] }>();
        const callers: Array<{ got: Outcome; expected: () => Outcome }> = [];
        /** Invalidations so far (any key), and the stamps taken: what `set(…, since)` is checked against. */
        let invalidations = 0;
        const stamps: Array<{ real: ReturnType<typeof cache.stamp>; model: number }> = [];
        let sets = 0;

        const invalidate = (k: Key) => {
          kept.delete(k);
          generation.set(k, (generation.get(k) ?? 0) + 1);
          shared.delete(k);
        };

        for (const step of ops) {
          if (step.kind === "get") {
            const before = started.length;
            const caller: { got: Outcome; expected: () => Outcome } = { got: { pending: true }, expected: () => ({ pending: true }) };
            callers.push(caller);
            cache
              .get(
                step.key,
                (current) =>
                  new Promise<Value>((resolve, reject) => {
                    const load: Load = { id: started.length + 1, key: step.key, settle: (o) => ("value" in o ? resolve(o.value) : reject(o.error)), current };
                    started.push(load);
                    pending.push(load);
                  }),
                (value) => value.lifetime,
              )
              .then(
                (value) => (caller.got = { value }),
                (error: Error) => (caller.got = { error: error.message }),
              );
            await flush();
            const fresh = kept.get(step.key);
            if (fresh && clock < fresh.freshUntil) {
              expect(started.length).toBe(before);
              const value = fresh.value;
              caller.expected = () => ({ value });
            } else if (shared.has(step.key)) {
              expect(started.length).toBe(before);
              const record = loads.get(shared.get(step.key)!)!;
              const outcomes = record.callers;
              caller.expected = () => outcomes[0] ?? { pending: true };
            } else {
              expect(started.length).toBe(before + 1);
              const id = started.length;
              const outcomes: Outcome[] = [];
              loads.set(id, { key: step.key, generation: generation.get(step.key) ?? 0, epoch, callers: outcomes });
              shared.set(step.key, id);
              caller.expected = () => outcomes[0] ?? { pending: true };
            }
          } else if (step.kind === "settle") {
            if (pending.length === 0) continue;
            const load = pending.splice(step.pick % pending.length, 1)[0]!;
            const record = loads.get(load.id)!;
            expect(load.current()).toBe((generation.get(record.key) ?? 0) === record.generation && epoch === record.epoch);
            if (step.fail) {
              load.settle({ error: new Error(`load ${load.id} failed`) });
              record.callers.push({ error: `load ${load.id} failed` });
            } else {
              const value = { load: load.id, lifetime: step.lifetime };
              load.settle({ value });
              record.callers.push({ value });
              const current = (generation.get(record.key) ?? 0) === record.generation && epoch === record.epoch;
              if (current && step.lifetime > 0) kept.set(record.key, { value, freshUntil: clock + step.lifetime });
            }
            if (shared.get(record.key) === load.id) shared.delete(record.key);
            await flush();
          } else if (step.kind === "invalidate") {
            cache.invalidate(step.key);
            invalidate(step.key);
            invalidations += 1;
          } else if (step.kind === "invalidateInstallation") {
            cache.invalidateWhere((k) => k.startsWith(step.prefix));
            for (const k of KEYS) if (k.startsWith(step.prefix)) invalidate(k);
            invalidations += 1;
          } else if (step.kind === "peek") {
            const fresh = kept.get(step.key);
            expect(cache.peek(step.key)).toEqual(fresh && clock < fresh.freshUntil ? fresh.value : undefined);
          } else if (step.kind === "stamp") {
            stamps.push({ real: cache.stamp(), model: invalidations });
          } else if (step.kind === "set") {
            sets += 1;
            const value = { load: 10_000 + sets, lifetime: step.lifetime };
            const since = step.since === null || stamps.length === 0 ? undefined : stamps[step.since % stamps.length]!;
            const stored = cache.set(step.key, value, step.lifetime, since?.real);
            const expected = (since === undefined || since.model === invalidations) && step.lifetime > 0;
            expect(stored).toBe(expected);
            if (expected) kept.set(step.key, { value, freshUntil: clock + step.lifetime });
          } else if (step.kind === "invalidateIf") {
            // A 401 on the value this caller holds: forgets it only if it is still the one kept.
            const held = kept.get(step.key)?.value.load ?? -1;
            cache.invalidateIf(step.key, (value) => value.load === held);
            kept.delete(step.key);
          } else if (step.kind === "clear") {
            cache.clear();
            kept.clear();
            shared.clear();
            epoch += 1;
            invalidations += 1;
          } else {
            clock += step.ms;
          }
          for (const caller of callers) expect(caller.got).toEqual(caller.expected());
        }
        // Everything still in flight settles: nothing hangs, every caller gets its own load's answer.
        for (const load of pending.splice(0)) {
          load.settle({ value: { load: load.id, lifetime: 1 } });
          loads.get(load.id)!.callers.push({ value: { load: load.id, lifetime: 1 } });
        }
        await flush();
        for (const caller of callers) expect(caller.got).toEqual(caller.expected());
      }),
      { numRuns: 500 },
    );
  });

  it("an invalidation while a load is in flight: the waiting callers get it, the next get loads again", async () => {
    let clock = 1_000_000;
    const cache = createLoadingCache<string>({ max: 10, now: () => clock });
    let release!: (value: string) => void;
    let loads = 0;
    const slow = () => {
      loads += 1;
      return new Promise<string>((resolve) => (release = resolve));
    };
    const first = cache.get("k", slow, () => 60_000);
    const second = cache.get("k", slow, () => 60_000);
    await flush();
    cache.invalidate("k");
    release("minted before");
    expect(await first).toBe("minted before");
    expect(await second).toBe("minted before");
    const after = cache.get("k", async () => {
      loads += 1;
      return "minted after";
    }, () => 60_000);
    expect(await after).toBe("minted after");
    expect(loads).toBe(2);
    clock += 1;
    expect(await cache.get("k", async () => "not asked", () => 60_000)).toBe("minted after");
  });
});
