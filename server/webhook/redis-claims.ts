import type { Redis } from "ioredis";
import { BODY_DIGEST_TTL_MS, DELIVERY_TTL_MS } from "./claim-log.js";
import type { ClaimOutcome, DeliveryMark } from "./memory-claims.js";

const DELIVERY_ID = /^[A-Za-z0-9-]{1,100}$/;

/** The keys of the durable queues' claims (push and check run share them: a delivery is one delivery). */
export const claimKeys = (prefix: string) => ({
  delivery: (id: string) => `${prefix}:delivery:${id}`,
  body: (digest: string) => `${prefix}:body:${digest}`,
});

/**
 * The replay defence of the durable queues: `SET <prefix>:delivery:<id> <body digest> NX PX 1h`,
 * then `SET <prefix>:body:<sha256> <id> NX PX 24h` — each atomic, whichever instance receives the
 * delivery. `undo` hands back what this call claimed (the work could not be queued). A Redis that
 * fails part-way has what was claimed handed back before the error is thrown.
 */
export async function claimInRedis(
  commands: Redis,
  prefix: string,
  delivery: DeliveryMark,
  bounded: <T>(work: Promise<T>) => Promise<T>,
): Promise<{ outcome: ClaimOutcome; undo: () => Promise<void> }> {
  const keys = claimKeys(prefix);
  const id = delivery.id && DELIVERY_ID.test(delivery.id) ? delivery.id : undefined;
  const claimed: string[] = [];
  const undo = async () => {
    if (claimed.length > 0) await commands.del(...claimed).catch(() => undefined);
  };
  try {
    if (id !== undefined) {
      if ((await bounded(commands.set(keys.delivery(id), delivery.bodyDigest, "PX", DELIVERY_TTL_MS, "NX"))) !== "OK") return { outcome: "duplicate", undo: async () => undefined };
      claimed.push(keys.delivery(id));
    }
    // A replayed body under a fresh id: that id stays claimed, so resending it is a duplicate as well.
    if ((await bounded(commands.set(keys.body(delivery.bodyDigest), id ?? "-", "PX", BODY_DIGEST_TTL_MS, "NX"))) !== "OK") return { outcome: "replayed", undo: async () => undefined };
    claimed.push(keys.body(delivery.bodyDigest));
    return { outcome: "claimed", undo };
  } catch (error) {
    await undo();
    throw error;
  }
}
