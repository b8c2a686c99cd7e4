// A model test of the REST points window the broker instances share on Redis
// (server/kv/shared-limits.ts `takePoints`; docs/operations.md#shared-limits), against the suite's
// real Redis: two "instances" (connections of their own) take points for one principal, settle
// them as sent (at a later clock) or refund them, and the injected clock moves (a call still out
// after 10 s, the upstream timeout, is answered then). The model: each
// grant's points count from the sixtieth of the window it was taken in until it settles, then from
// the sixtieth of its answer; a sixtieth counts while it is no more than a window (and a sixtieth)
// old. Invariants: a take is granted exactly when what the model counts plus its points fit the
// budget; a refusal's wait is when enough has left (never earlier than the model frees it); and
// the points granted whose time at the platform (take to answer) falls in any one window never
// exceed the budget.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createLogger } from "../server/log.js";
import { openRedisConnection, type RedisConnection } from "../server/kv/redis-connection.js";
import { openSharedLimits, type SharedLimits, type SharedPoints } from "../server/kv/shared-limits.js";
import { deleteKeysUnder, REDIS_URL } from "./support/redis-url.js";

const WINDOW_MS = 60_000;
const SLICE_MS = WINDOW_MS / 60;
const BUDGET = 12;
/** The longest a call is out (the broker's upstream timeout is 10 s): the shared window holds its points from its take until then, then a window from its answer. */
const CALL_TIMEOUT_MS = 10_000;
const PREFIX = `shared-points-model-${randomUUID().slice(0, 8)}`;
const log = createLogger({ level: "fatal" });
const connections: RedisConnection[] = [];

afterAll(async () => {
  for (const connection of connections) connection.close();
  await deleteKeysUnder([PREFIX]);
});

type Op = { op: "take"; instance: 0 | 1; points: 1 | 5 } | { op: "settle"; pick: number; sent: boolean } | { op: "advance"; ms: number };

const ops: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("take" as const), instance: fc.constantFrom(0 as const, 1 as const), points: fc.constantFrom(1 as const, 5 as const) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("settle" as const), pick: fc.nat(10), sent: fc.boolean() }) },
  { weight: 2, arbitrary: fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 70_000 })).map((ms) => ({ op: "advance" as const, ms })) },
  // A window, to a sixtieth of it: where the window's edge is decided.
  { weight: 2, arbitrary: fc.constantFrom(SLICE_MS, WINDOW_MS - SLICE_MS, WINDOW_MS, WINDOW_MS + SLICE_MS / 2).map((ms) => ({ op: "advance" as const, ms })) },
);

interface Grant {
  points: number;
  takenAt: number;
  /** When its answer came in; undefined while out; null if refunded. */
  settledAt?: number | null;
  place: SharedPoints;
}

const sliceOf = (at: number) => Math.floor(at / SLICE_MS);

describe("the shared points window, model-based (real Redis)", () => {
  it("grants exactly what fits the budget across both instances; never more than the budget in any window of the platform's", async () => {
    const instances = [0, 1].map(() => {
      const connection = openRedisConnection(REDIS_URL, { timeoutMs: 2000 });
      connections.push(connection);
      return openSharedLimits(connection, { url: REDIS_URL, prefix: PREFIX, log, timeoutMs: 2000 });
    }) as [SharedLimits, SharedLimits];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(ops, { maxLength: 40 }), async (steps) => {
        const principal = `app:${(run += 1)}`;
        let now = 1_800_000_000_000;
        const grants: Grant[] = [];
        /** Points the window counts at `now`: each grant's slice (its take's until it settles, then its answer's), while no more than a window and a slice old. */
        const counted = () =>
          grants
            .filter((grant) => grant.settledAt !== null)
            .reduce((sum, grant) => {
              const slice = sliceOf(grant.settledAt === undefined ? grant.takenAt : Math.max(grant.takenAt, grant.settledAt as number));
              return slice >= sliceOf(now) - 60 ? sum + grant.points : sum;
            }, 0);
        for (const step of steps) {
          if (step.op === "advance") {
            // A call is answered (or given up) within its timeout: the ones still out settle then.
            for (const grant of grants.filter((one) => one.settledAt === undefined && one.takenAt + CALL_TIMEOUT_MS <= now + step.ms)) {
              grant.settledAt = grant.takenAt + CALL_TIMEOUT_MS;
              await grant.place.settle(true, grant.settledAt);
            }
            now += step.ms;
          }
          else if (step.op === "settle") {
            const out = grants.filter((grant) => grant.settledAt === undefined);
            const grant = out[step.pick % Math.max(1, out.length)];
            if (!grant) continue;
            grant.settledAt = step.sent ? now : null;
            await grant.place.settle(step.sent, now);
          } else {
            const fits = counted() + step.points <= BUDGET;
            const answer = await instances[step.instance].takePoints(principal, step.points, BUDGET, WINDOW_MS, now);
            expect(answer).not.toBe("unavailable");
            if (answer === "unavailable") return;
            expect("settle" in answer).toBe(fits);
            if ("settle" in answer) grants.push({ points: step.points, takenAt: now, place: answer });
            else expect(answer.retryAfterMs).toBeGreaterThanOrEqual(SLICE_MS);
          }
          // The platform's view: a sent call is at the platform somewhere between its take and its
          // answer; any 60 s window it may fall in counts it (one still out counts from its take on).
          const sent = grants.filter((grant) => grant.settledAt !== null);
          for (const x of sent) {
            const overlapping = sent.filter((y) => y.takenAt <= x.takenAt && (y.settledAt === undefined || y.settledAt! > x.takenAt - WINDOW_MS));
            expect(overlapping.reduce((sum, y) => sum + y.points, 0)).toBeLessThanOrEqual(BUDGET);
          }
        }
      }),
      { numRuns: 300 },
    );
  }, 120_000);

  it("a sent call's points count from its answer's sixtieth for a window, and free the sixtieth after", async () => {
    const connection = openRedisConnection(REDIS_URL, { timeoutMs: 2000 });
    connections.push(connection);
    const limits = openSharedLimits(connection, { url: REDIS_URL, prefix: PREFIX, log, timeoutMs: 2000 });
    const principal = `app:edge-${randomUUID().slice(0, 8)}`;
    const start = 1_800_000_000_000; // a sixtieth's start
    const first = await limits.takePoints(principal, 10, BUDGET, WINDOW_MS, start);
    if (!(typeof first === "object" && "settle" in first)) throw new Error("the first take must be granted");
    await first.settle(true, start + 500); // answered within the same sixtieth
    // A window later, to the sixtieth: still counted (the platform may have seen it up to 500 ms in).
    const edge = await limits.takePoints(principal, 5, BUDGET, WINDOW_MS, start + WINDOW_MS);
    expect(edge).toEqual({ retryAfterMs: SLICE_MS });
    expect(await limits.takePoints(principal, 5, BUDGET, WINDOW_MS, start + WINDOW_MS + SLICE_MS - 1)).toEqual({ retryAfterMs: SLICE_MS });
    // The sixtieth after: free.
    const after = await limits.takePoints(principal, 5, BUDGET, WINDOW_MS, start + WINDOW_MS + SLICE_MS);
    expect(typeof after === "object" && "settle" in after).toBe(true);
  });
});
