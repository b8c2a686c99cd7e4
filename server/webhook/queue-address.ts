// WEBHOOK_QUEUE's address, apart from the queues themselves so that reading it (doctor, the
// settings) does not load BullMQ.
const DEFAULT_PREFIX = "tokensmith";
/** The lease of a running job: its instance renews it; unrenewed this long, another takes the job over. */
const DEFAULT_LEASE_MS = 30_000;

export interface QueueAddress {
  /** The Redis URL without the broker's own query parameters. */
  redisUrl: string;
  /** BullMQ key prefix (and of the broker's own keys): `?prefix=` — separate queues on one Redis. */
  prefix: string;
  /** `?lease_ms=`: the job lease (BullMQ `lockDuration`; the stalled check runs every tenth of it). */
  leaseMs: number;
}

/** `redis://host:port[/db][?prefix=name&lease_ms=30000]` (also `rediss://`). */
export function parseQueueAddress(raw: string): QueueAddress {
  const url = new URL(raw);
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new Error("WEBHOOK_QUEUE must be a redis:// or rediss:// URL");
  const prefix = url.searchParams.get("prefix") || DEFAULT_PREFIX;
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(prefix)) throw new Error("WEBHOOK_QUEUE prefix must be letters, digits, _ . -");
  const lease = Number(url.searchParams.get("lease_ms") ?? DEFAULT_LEASE_MS);
  url.searchParams.delete("prefix");
  url.searchParams.delete("lease_ms");
  return { redisUrl: url.toString(), prefix, leaseMs: Number.isSafeInteger(lease) && lease >= 1000 ? lease : DEFAULT_LEASE_MS };
}


/**
 * BullMQ's worker timings for a lease. A job's lock lasts the lease and is renewed every half lease;
 * a job is moved back to waiting by the second stalled check that finds it unlocked-and-active
 * (the first marks it), and one check runs per interval for all instances together (the check
 * itself holds a key for an interval, so an interval can be skipped). A job whose instance died
 * is thus taken over at most lease + 2 × interval after the death: with the interval at a tenth of
 * the lease (at least 100 ms), within 1.2 leases (36 s at the default 30 s; it was up to 3 leases
 * with the interval at the lease). The check is one Lua script per interval on the queue's Redis.
 */
export function workerTimings(leaseMs: number): { lockDuration: number; stalledInterval: number; maxStalledCount: number } {
  return { lockDuration: leaseMs, stalledInterval: Math.max(100, Math.floor(leaseMs / 10)), maxStalledCount: 10 };
}
