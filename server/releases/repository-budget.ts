/**
 * RELEASES_MAX_REPOSITORIES across installations crawled concurrently. The aggregate keeps the
 * first `max` repositories in installation order (deterministic, whatever finishes first); this
 * tells each installation how many it could still contribute, from the counts of the installations
 * before it that have finished listing, so an installation that cannot add anything is not crawled
 * and none lists more than `max + 1` (one over the cap proves the list was cut).
 */
export function createRepositoryBudget(max: number) {
  const counts = new Map<number, number>();
  return {
    /** How many repositories installation `index` should list at most; 0 or less: skip it. */
    roomFor(index: number): number {
      let before = 0;
      for (const [i, count] of counts) if (i < index) before += count;
      return max + 1 - before;
    },
    record(index: number, count: number): void {
      counts.set(index, count);
    },
  };
}

/** The first `max` items in order, and whether any were left out. */
export function takeFirst<T>(groups: ReadonlyArray<readonly T[]>, max: number): { items: T[]; cut: boolean } {
  const items: T[] = [];
  for (const group of groups) {
    for (const item of group) {
      if (items.length === max) return { items, cut: true };
      items.push(item);
    }
  }
  return { items, cut: false };
}
