// The store breaker (server/kv/store-breaker.ts) as a state machine against a model: after a
// failure the store is skipped for openMs, tried again after it; a success closes it at once.
// test/store-outage-answers.test.ts proves what it buys on the built broker (a black-holed Redis).
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createStoreBreaker } from "../server/kv/store-breaker.js";

type Step = { kind: "wait"; ms: number } | { kind: "failed" } | { kind: "succeeded" };

describe("store breaker (model)", () => {
  it("skips exactly from a failure until openMs after it, and never after a success", () => {
    const step = fc.oneof(
      fc.integer({ min: 0, max: 5_000 }).map((ms): Step => ({ kind: "wait", ms })),
      fc.constant<Step>({ kind: "failed" }),
      fc.constant<Step>({ kind: "succeeded" }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4_000 }), fc.array(step, { maxLength: 40 }), (openMs, steps) => {
        let now = 1_000_000;
        const breaker = createStoreBreaker({ openMs, now: () => now });
        let lastFailure: number | null = null; // the model: when the latest failure since a success was
        for (const s of steps) {
          if (s.kind === "wait") now += s.ms;
          else if (s.kind === "failed") lastFailure = now;
          else lastFailure = null;
          if (s.kind === "failed") breaker.failed();
          if (s.kind === "succeeded") breaker.succeeded();
          expect(breaker.skipping()).toBe(lastFailure !== null && now < lastFailure + openMs);
        }
      }),
      { numRuns: 300 },
    );
  });
});
