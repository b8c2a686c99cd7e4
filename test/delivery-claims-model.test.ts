// Issue 37 item 2, the state machine every in-process queue claims a delivery with (push and check
// run alike, server/webhook/memory-claims.ts) against a model: a delivery id seen within the hour
// is a duplicate (and spends nothing else); otherwise the id is spent and the signed body decides —
// seen within the day, a replay; else claimed. A forgotten id or body (its work failed before
// acting) may be claimed again. test/policy-check-run-share.test.ts proves the same over HTTP.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { BODY_DIGEST_TTL_MS } from "../server/webhook/body-digests.js";
import { DELIVERY_TTL_MS } from "../server/webhook/deliveries.js";
import { createMemoryClaims, type ClaimOutcome } from "../server/webhook/memory-claims.js";

interface Model {
  now: number;
  ids: Map<string, number>;
  bodies: Map<string, number>;
}

interface Real {
  clock: { now: number };
  claims: ReturnType<typeof createMemoryClaims>;
}

const live = (until: number | undefined, now: number) => until !== undefined && until > now;

class Claim implements fc.AsyncCommand<Model, Real> {
  constructor(readonly id: string | undefined, readonly digest: string) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    let expected: ClaimOutcome;
    if (this.id !== undefined && live(model.ids.get(this.id), model.now)) {
      expected = "duplicate";
    } else {
      if (this.id !== undefined) model.ids.set(this.id, model.now + DELIVERY_TTL_MS);
      const fresh = !live(model.bodies.get(this.digest), model.now);
      if (fresh) model.bodies.set(this.digest, model.now + BODY_DIGEST_TTL_MS);
      expected = fresh ? "claimed" : "replayed";
    }
    expect(await real.claims.claim({ id: this.id, bodyDigest: this.digest }, null, null)).toBe(expected);
  }
  toString = () => `claim(${this.id ?? "no id"}, ${this.digest})`;
}

class Forget implements fc.AsyncCommand<Model, Real> {
  constructor(readonly id: string, readonly digest: string) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    model.ids.delete(this.id);
    model.bodies.delete(this.digest);
    await real.claims.forgetId(this.id, null);
    await real.claims.forgetBody(this.digest);
  }
  toString = () => `forget(${this.id}, ${this.digest})`;
}

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    model.now += this.ms;
    real.clock.now += this.ms;
  }
  toString = () => `advance(${this.ms})`;
}

describe("delivery claims (model)", () => {
  it("a duplicate id, a replayed body and a forgotten delivery behave as the model says, across expiries", async () => {
    const id = fc.constantFrom("d-1", "d-2", "d-3");
    const digest = fc.constantFrom("a", "b", "c");
    const commands = [
      fc.tuple(fc.option(id, { nil: undefined }), digest).map(([i, d]) => new Claim(i, d)),
      fc.tuple(id, digest).map(([i, d]) => new Forget(i, d)),
      fc.oneof(fc.integer({ min: 1, max: 60_000 }), fc.constant(DELIVERY_TTL_MS), fc.constant(BODY_DIGEST_TTL_MS - 1), fc.constant(BODY_DIGEST_TTL_MS)).map((ms) => new Advance(ms)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 60 }), async (cmds) => {
        const clock = { now: 1_700_000_000_000 };
        const setup = () => ({ model: { now: clock.now, ids: new Map<string, number>(), bodies: new Map<string, number>() }, real: { clock, claims: createMemoryClaims({ now: () => clock.now }) } });
        await fc.asyncModelRun(setup, cmds);
      }),
      { numRuns: 300 },
    );
  });
});
