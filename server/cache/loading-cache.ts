// The one cache primitive (docs/design.md "Caches"): values kept in an `lru-cache` (bounded by
// `max`, each value kept for its own lifetime, on the broker's injected clock), loaded on a miss
// through one shared load per key, and one invalidation rule:
//
//   a load that started before an invalidation does not store its result.
//
// Each load reads its key's generation (and the cache's, for clear-all) when it starts and
// compares them when it ends; an invalidation moves the generation on. The callers that were
// already waiting on that load still get its answer (they asked before the invalidation), but it
// is not kept, and a get after the invalidation starts a load of its own rather than sharing the
// old one. Without this rule a reader token minted before an `installation_repositories` delivery
// would be kept for its whole life, blind to the repository the delivery added.
//
// Why not lru-cache's own `fetchMethod` for the shared load: a `delete` during a fetch aborts it
// and rejects the callers already waiting (or, with `ignoreFetchAbort`, the rule rests on an
// internal check, not on anything we can test or read here), and keys with a fetch under way are
// not listed by `keys()`, so an invalidation by installation could not reach them.
import { LRUCache } from "lru-cache";

export interface LoadingCacheOptions {
  /** At most this many values are kept; the least recently used goes first. */
  max: number;
  /** Milliseconds; the broker's clock (tests move it). */
  now: () => number;
}

export interface LoadingCache<V> {
  /**
   * The value kept for `key` if it is still fresh; otherwise `load()`, run once for every caller
   * asking at the same time, and kept for `lifetimeMs(value)` (≤ 0: not kept) unless an
   * invalidation of `key` came while it ran. A failed load is not kept. `load` may ask `current()`
   * whether its result would still be kept (no invalidation yet), to skip a side effect of its own
   * (a write to a shared store) that the rule would refuse.
   */
  get(key: string, load: (current: () => boolean) => Promise<V>, lifetimeMs: (value: V) => number): Promise<V>;
  /** Forget `key`, and let no load under way for it store its result. */
  invalidate(key: string): void;
  /**
   * `invalidate` every key (kept or being loaded) that `match` accepts; `value` is the value kept
   * for it (fresh or not), undefined for a key only being loaded.
   */
  invalidateWhere(match: (key: string, value: V | undefined) => boolean): void;
  /**
   * Forget the value kept for `key` (fresh or past its lifetime) if `matches` accepts it (a 401 on
   * a token that another caller may already have replaced; a claim handed back by its own holder).
   * A load under way is left alone: it is the replacement.
   */
  invalidateIf(key: string, matches: (value: V) => boolean): void;
  /** `invalidate` every key. */
  clear(): void;
  /** The fresh value kept for `key`, or undefined; never loads, and does not count as a use for `max`. */
  peek(key: string): V | undefined;
  /**
   * For a value worked out outside `get` (a claim, a note, an answer learnt elsewhere): a mark of
   * the invalidations so far, taken before the work starts and given to `set`.
   */
  stamp(): Stamp;
  /**
   * Keep `value` for `key` for `lifetimeMs` (≤ 0: not kept). With `since`: only if no invalidation
   * (of any key: coarser than `get`'s rule per key, never looser) came after that stamp. Whether it was kept.
   */
  set(key: string, value: V, lifetimeMs: number, since?: Stamp): boolean;
  /** How many values are kept (fresh or not yet pushed out). */
  readonly size: number;
}

/** What `stamp()` returns: opaque to the callers. */
export type Stamp = number & { readonly __stamp: unique symbol };

interface Kept<V> {
  value: V;
  /** Fresh while `now() < freshUntil` (lru-cache's own expiry only bounds memory). */
  freshUntil: number;
}

/** Loads under way for one key: the one new callers share, and the key's generation. */
interface Loading<V> {
  shared: Promise<V> | undefined;
  generation: number;
  running: number;
}

export function createLoadingCache<V>(options: LoadingCacheOptions): LoadingCache<V> {
  const kept = new LRUCache<string, Kept<V>>({
    // Bounded by count through maxSize (each value counts 1), not `max`: lru-cache allocates `max`
    // slots up front, and a broker's caches hold up to 100,000 values each while most stay nearly
    // empty (78 ms and 7.6 MB per broker at start: docs/operations.md#caches).
    maxSize: options.max,
    sizeCalculation: () => 1,
    perf: { now: options.now },
    // lru-cache keeps the clock's reading for 1 ms by default: a test's clock moves in between.
    ttlResolution: 0,
  });
  // Only keys with a load under way have an entry here, so it is bounded by the loads running.
  const loading = new Map<string, Loading<V>>();
  let epoch = 0;
  /** Every invalidation (of a key, by a predicate, of all) moves it on: what `set(…, since)` compares. */
  let invalidations = 0;

  const keep = (key: string, value: V, lifetime: number) => {
    if (lifetime > 0) kept.set(key, { value, freshUntil: options.now() + lifetime }, { ttl: Math.ceil(lifetime) });
  };

  const invalidate = (key: string) => {
    invalidations += 1;
    kept.delete(key);
    const under = loading.get(key);
    if (under) {
      under.generation += 1;
      under.shared = undefined;
    }
  };

  return {
    get(key, load, lifetimeMs) {
      const hit = kept.get(key);
      if (hit && options.now() < hit.freshUntil) return Promise.resolve(hit.value);
      let under = loading.get(key);
      if (under?.shared) return under.shared;
      if (!under) {
        under = { shared: undefined, generation: 0, running: 0 };
        loading.set(key, under);
      }
      const slot = under;
      const started = { generation: slot.generation, epoch };
      const current = () => slot.generation === started.generation && epoch === started.epoch;
      slot.running += 1;
      // Started on the next tick of the promise chain, so that `shared` exists when it settles.
      const shared: Promise<V> = Promise.resolve()
        .then(() => load(current))
        .then((value) => {
          if (current()) {
            keep(key, value, lifetimeMs(value));
          }
          return value;
        })
        .finally(() => {
          if (slot.shared === shared) slot.shared = undefined;
          slot.running -= 1;
          if (slot.running === 0 && loading.get(key) === slot) loading.delete(key);
        });
      slot.shared = shared;
      return shared;
    },
    invalidate,
    invalidateWhere(match) {
      invalidations += 1;
      for (const key of new Set([...kept.keys(), ...loading.keys()])) if (match(key, kept.peek(key, { allowStale: true })?.value)) invalidate(key);
    },
    invalidateIf(key, matches) {
      // Fresh or not: a value past its lifetime still holds its place under `max` until it goes.
      const hit = kept.peek(key, { allowStale: true });
      if (hit && matches(hit.value)) kept.delete(key);
    },
    clear() {
      epoch += 1;
      invalidations += 1;
      kept.clear();
      for (const under of loading.values()) under.shared = undefined;
    },
    peek(key) {
      // Not a use: the values a cache only peeks at (a note, a claim) go out oldest set first.
      const hit = kept.peek(key);
      return hit && options.now() < hit.freshUntil ? hit.value : undefined;
    },
    stamp: () => invalidations as Stamp,
    set(key, value, lifetimeMs, since) {
      if (since !== undefined && since !== invalidations) return false;
      if (lifetimeMs <= 0) return false;
      keep(key, value, lifetimeMs);
      return true;
    },
    get size() {
      return kept.size;
    },
  };
}
