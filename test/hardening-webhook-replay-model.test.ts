// Issue 24 item 4, the state machine: the in-process log of push-body digests
// (server/webhook/body-digests.ts) against a model — a body claimed within 24 h is refused, a
// forgotten one may be claimed again, an expired one is new, and past the bound the oldest goes
// first. test/hardening-webhook-replay.test.ts proves the same over HTTP.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { BODY_DIGEST_TTL_MS, createBodyDigestLog } from "../server/webhook/body-digests.js";

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

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
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
      fc.oneof(fc.integer({ min: 1, max: 60_000 }), fc.constant(BODY_DIGEST_TTL_MS - 1), fc.constant(BODY_DIGEST_TTL_MS), fc.integer({ min: 1, max: 2 * BODY_DIGEST_TTL_MS })).map((ms) => new Advance(ms)),
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
