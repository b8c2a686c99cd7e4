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
  /** `?lease_ms=`: the job lease (BullMQ `lockDuration`, also the stalled-check interval). */
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

