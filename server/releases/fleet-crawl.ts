import type { LeaseLock } from "../kv/lease-lock.js";
import type { Logger } from "../log.js";

/**
 * How long a request waits for another instance's crawl before crawling itself: well under the
 * ~30 s a load balancer or a dashboard gives a request, and longer than a lease (10 s by default),
 * so a dead holder is normally replaced by a waiter first.
 */
export const WAIT_BUDGET_MS = 15_000;

/** A waiter looks at the lock this often (one EXISTS; the aggregate is read once the lock is gone). */
const POLL_MS = 100;

/** The lock key of an aggregate key (same namespace as the aggregate, a prefix of its own). */
export function lockKey(aggregateKey: string): string {
  return `tokensmith-releases:lock:${aggregateKey}`;
}

interface FleetCrawlInput<T> {
  lock: LeaseLock;
  key: string;
  leaseMs: number;
  /** The fresh cached value, or undefined. */
  readCached: () => Promise<T | undefined>;
  /** Crawls and stores the value. */
  crawl: () => Promise<T>;
  log: Logger;
  now: () => number;
  /** Past this (epoch ms) a waiter stops waiting and crawls itself. */
  deadline: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * One crawl for the fleet (docs/api.md#get-releases): take the lease and crawl (renewing it while
 * the crawl runs; released at the end, success or not), or wait while another instance holds it
 * and then read what it stored. The lease gone without a value (the holder failed or died) → try
 * to take it. Redis unavailable → crawl here, as without a lock. Past the deadline → crawl here.
 */
export async function crawlOnceForFleet<T>(input: FleetCrawlInput<T>): Promise<{ value: T; cached: boolean }> {
  const { lock, key, log } = input;
  const sleep = input.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let waited = false;
  for (;;) {
    const lease = await lock.acquire(key, input.leaseMs);
    if (lease === "unavailable") return { value: await input.crawl(), cached: false };
    if (lease !== "taken") {
      if (waited) log.info({ lease_ms: input.leaseMs }, "releases crawl: lease free without an aggregate; crawling here");
      try {
        // Another instance may have stored it between our miss and our lease.
        const hit = await input.readCached();
        if (hit !== undefined) return { value: hit, cached: true };
        return { value: await renewingWhile(lease, input.leaseMs, log, input.crawl), cached: false };
      } finally {
        await lease.release();
      }
    }
    if (!waited) log.info({ lease_ms: input.leaseMs }, "releases crawl: another instance is crawling; waiting for its aggregate");
    waited = true;
    for (;;) {
      if (input.now() >= input.deadline) {
        log.warn({ lease_ms: input.leaseMs }, "releases crawl: waited too long for another instance; crawling here");
        return { value: await input.crawl(), cached: false };
      }
      await sleep(POLL_MS);
      const held = await lock.held(key);
      if (held === true) continue;
      const hit = await input.readCached();
      if (hit !== undefined) return { value: hit, cached: true };
      if (held === undefined) return { value: await input.crawl(), cached: false }; // Redis gone meanwhile
      break; // lease gone, nothing stored: take it
    }
  }
}

async function renewingWhile<T>(lease: { renew(ms: number): Promise<boolean> }, leaseMs: number, log: Logger, run: () => Promise<T>): Promise<T> {
  let lost = false;
  const timer = setInterval(() => {
    void lease.renew(leaseMs).then((kept) => {
      if (!kept && !lost) {
        lost = true;
        log.warn({ lease_ms: leaseMs }, "releases crawl: lease lost while crawling (another instance may crawl too)");
      }
    });
  }, Math.max(50, Math.floor(leaseMs / 3)));
  try {
    return await run();
  } finally {
    clearInterval(timer);
  }
}
