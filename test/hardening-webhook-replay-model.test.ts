// Issue 24 item 4, the state machine: the in-process log of push-body digests
// (server/webhook/claim-log.ts) against a model — a body claimed within 24 h is refused, a
// forgotten one may be claimed again, an expired one is new, and past the bound the oldest goes
// first. test/hardening-webhook-replay.test.ts proves the same over HTTP.
// Issue 37 item 2: the claims every in-process queue takes of a delivery (push and check run
// alike, server/webhook/memory-claims.ts) against a model: a delivery id seen within the hour is a
// duplicate (and spends nothing else); otherwise the id is spent and the signed body decides —
// seen within the day, a replay; else claimed. A forgotten id or body (its work failed before
// acting) may be claimed again. test/policy-check-run-share.test.ts proves the same over HTTP.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { BODY_DIGEST_TTL_MS, createBodyDigestLog, DELIVERY_TTL_MS } from "../server/webhook/claim-log.js";
import { createMemoryClaims, type ClaimOutcome } from "../server/webhook/memory-claims.js";

const LIMIT = 4;

interface Model {
  now: number;
  /** digest → expiry, in insertion order (the real log's eviction order). */
  seen: Map<string, number>;
}

interface Real {
  clock: { now: number };
  log: ReturnType<typeof createBodyDigestLog>;
}

class Claim implements fc.AsyncCommand<Model, Real> {
  constructor(readonly digest: string) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const until = model.seen.get(this.digest);
    const fresh = until === undefined || until <= model.now;
    if (fresh) {
      model.seen.delete(this.digest);
      model.seen.set(this.digest, model.now + BODY_DIGEST_TTL_MS);
      while (model.seen.size > LIMIT) model.seen.delete(model.seen.keys().next().value as string);
    }
    expect(await real.log.claim(this.digest)).toBe(fresh);
  }
  toString = () => `claim(${this.digest})`;
}

class Forget implements fc.AsyncCommand<Model, Real> {
  constructor(readonly digest: string) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    model.seen.delete(this.digest);
    await real.log.forget(this.digest);
  }
  toString = () => `forget(${this.digest})`;
}

/** Time passes for both sides of either model. */
class Advance<M extends { now: number }, R extends { clock: { now: number } }> implements fc.AsyncCommand<M, R> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: M, real: R): Promise<void> {
    model.now += this.ms;
    real.clock.now += this.ms;
  }
  toString = () => `advance(${this.ms})`;
}

describe("push-body digest log (model)", () => {
  it("refuses a body seen within the day, until forgotten or expired; evicts the oldest past its bound", async () => {
    const digest = fc.constantFrom("a", "b", "c", "d", "e", "f");
    const commands = [
      digest.map((d) => new Claim(d)),
      digest.map((d) => new Forget(d)),
      fc.oneof(fc.integer({ min: 1, max: 60_000 }), fc.constant(BODY_DIGEST_TTL_MS - 1), fc.constant(BODY_DIGEST_TTL_MS), fc.integer({ min: 1, max: 2 * BODY_DIGEST_TTL_MS })).map((ms) => new Advance<Model, Real>(ms)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 60 }), async (cmds) => {
        const clock = { now: 1_700_000_000_000 };
        const setup = () => ({ model: { now: clock.now, seen: new Map<string, number>() }, real: { clock, log: createBodyDigestLog({ now: () => clock.now, limit: LIMIT }) } });
        await fc.asyncModelRun(setup, cmds);
      }),
      { numRuns: 300 },
    );
  });
});

interface ClaimsModel {
  now: number;
  ids: Map<string, number>;
  bodies: Map<string, number>;
}

interface ClaimsReal {
  clock: { now: number };
  claims: ReturnType<typeof createMemoryClaims>;
}

const live = (until: number | undefined, now: number) => until !== undefined && until > now;

class ClaimDelivery implements fc.AsyncCommand<ClaimsModel, ClaimsReal> {
  constructor(readonly id: string | undefined, readonly digest: string) {}
  check = () => true;
  async run(model: ClaimsModel, real: ClaimsReal): Promise<void> {
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

class ForgetDelivery implements fc.AsyncCommand<ClaimsModel, ClaimsReal> {
  constructor(readonly id: string, readonly digest: string) {}
  check = () => true;
  async run(model: ClaimsModel, real: ClaimsReal): Promise<void> {
    model.ids.delete(this.id);
    model.bodies.delete(this.digest);
    await real.claims.forgetId(this.id, null);
    await real.claims.forgetBody(this.digest);
  }
  toString = () => `forget(${this.id}, ${this.digest})`;
}

describe("delivery claims (model)", () => {
  it("a duplicate id, a replayed body and a forgotten delivery behave as the model says, across expiries", async () => {
    const id = fc.constantFrom("d-1", "d-2", "d-3");
    const digest = fc.constantFrom("a", "b", "c");
    const commands = [
      fc.tuple(fc.option(id, { nil: undefined }), digest).map(([i, d]) => new ClaimDelivery(i, d)),
      fc.tuple(id, digest).map(([i, d]) => new ForgetDelivery(i, d)),
      fc.oneof(fc.integer({ min: 1, max: 60_000 }), fc.constant(DELIVERY_TTL_MS), fc.constant(BODY_DIGEST_TTL_MS - 1), fc.constant(BODY_DIGEST_TTL_MS)).map((ms) => new Advance<ClaimsModel, ClaimsReal>(ms)),
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
