/**
 * A cache whose `get` tells each lookup's outcome (hit: a fresh value was kept) to `count`, for
 * tokensmith_cache_requests_total; the cache itself is unchanged.
 */
export function countLookups<K, V, C extends { get(key: K): V | undefined }>(cache: C, count: (hit: boolean) => void): C {
  return Object.assign(Object.create(null) as object, cache, {
    get(key: K): V | undefined {
      const value = cache.get(key);
      count(value !== undefined);
      return value;
    },
  }) as C;
}
