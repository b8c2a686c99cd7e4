// Issue 37 item 4, the state machine: the in-process claims of OIDC tokens
// (server/token/oidc-token-claims.ts) against a model — an id claimed and not yet expired is a
// replay; a claim handed back frees its id, but a late hand-back never frees a newer holder's
// claim; an expired claim is free again; past the bound the oldest claim goes first.
// test/token-replay.test.ts proves the same over HTTP, and across instances through Redis.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createOidcTokenClaims, type HeldClaim } from "../server/token/oidc-token-claims.js";

const LIMIT = 4;

interface Model {
  now: number;
  /** id → [expiry, holder number], in insertion order (the real store's eviction order). */
  held: Map<string, [number, number]>;
  /** Holder numbers handed out, in order; their id. */
  holders: string[];
}

interface Real {
  clock: { now: number };
  claims: ReturnType<typeof createOidcTokenClaims>;
  handles: HeldClaim[];
}

/** Time passes before each command: claims expire between them. */
function elapse(model: Model, real: Real, ms: number): void {
  model.now += ms;
  real.clock.now += ms;
}

class Claim implements fc.AsyncCommand<Model, Real> {
  constructor(readonly id: string, readonly ttlMs: number, readonly afterMs: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    elapse(model, real, this.afterMs);
    const entry = model.held.get(this.id);
    const free = entry === undefined || entry[0] <= model.now;
    const answer = await real.claims.claim(this.id, real.clock.now + this.ttlMs, null);
    if (!free) {
      expect(answer).toBe("replayed");
      return;
    }
    expect(answer).not.toBe("replayed");
    model.held.delete(this.id);
    model.held.set(this.id, [model.now + this.ttlMs, model.holders.length]);
    model.holders.push(this.id);
    real.handles.push(answer as HeldClaim);
    while (model.held.size > LIMIT) model.held.delete(model.held.keys().next().value as string);
    expect(real.claims.size()).toBeLessThanOrEqual(LIMIT);
  }
  toString = () => `+${this.afterMs} ms claim(${this.id}, ${this.ttlMs})`;
}

class Release implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number, readonly afterMs: number) {}
  check = (model: Readonly<Model>) => model.holders.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    elapse(model, real, this.afterMs);
    const holder = this.pick % model.holders.length;
    const id = model.holders[holder]!;
    // Only the holder's own claim is freed: a newer claim of the same id stays.
    if (model.held.get(id)?.[1] === holder) model.held.delete(id);
    await real.handles[holder]!.release();
  }
  toString = () => `+${this.afterMs} ms release(#${this.pick})`;
}

describe("OIDC token claims (model)", () => {
  it("a live claim is a replay until handed back by its own holder or expired; the oldest goes first past the bound", async () => {
    const id = fc.constantFrom("a", "b", "c", "d", "e", "f");
    // Mostly no time between commands (replays arrive together), sometimes past a claim's expiry.
    const wait = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 }));
    const commands = fc.commands(
      [
        fc.tuple(id, fc.integer({ min: 1, max: 5_000 }), wait).map(([key, ttl, after]) => new Claim(key, ttl, after)),
        fc.tuple(fc.nat(), wait).map(([pick, after]) => new Release(pick, after)),
      ],
      { size: "+1" },
    );
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        const clock = { now: 1_000_000 };
        const real: Real = { clock, claims: createOidcTokenClaims({ now: () => clock.now, limit: LIMIT }), handles: [] };
        await fc.asyncModelRun(() => ({ model: { now: clock.now, held: new Map(), holders: [] }, real }), cmds);
      }),
      { numRuns: 300 },
    );
  });
});
