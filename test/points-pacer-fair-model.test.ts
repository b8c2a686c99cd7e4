// A model-based test of the points pacer's fair shares (server/github/points-pacer.ts;
// docs/security.md#fair-shares-of-the-apps-budget): random sequences of App calls from several
// owners and repositories (and the broker's own calls, which name no tenant), 1 or 5 points, with
// or without an abort signal; answers coming in or calls given up before they went out; aborts;
// clock moves; admissions taken and given back. Run against the real pacer with a fake clock and
// fake timers, one principal (the App). Invariants, after every step:
// - safety: the App's calls whose time at the platform may fall in one window never exceed the budget;
// - shares: a call granted to an owner while another owner's call (or the broker's own) waits
//   leaves that owner at most FAIR_SHARE of the budget in the window; one granted to a repository
//   while another repository of its owner waits leaves it at most FAIR_SHARE of its owner's widest part;
// - headroom: a call that takes an owner past FAIR_SHARE leaves HEADROOM of the budget free (a
//   repository: of its owner's widest part), alone or not;
// - spread: no owner takes more than SPREAD of its widest part in any tenth of the window while
//   another owner has points in the window or waits, nor a repository while another of its owner's waits;
// - work-conserving: when the window has room for every waiting call, no call waits that these
//   rules would let through as they stand;
// - liveness: once time runs on and answers come in, every waiter is served or was rejected by its
//   own abort; first in, first out within one repository;
// - admission: a tenant under its queue limits is always admitted; one at its repository's limit
//   with a call of that repository waiting is refused, with a wait of at least a second.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import {
  createPointsPacer,
  FAIR_SHARE,
  HEADROOM,
  MAX_CALL_POINTS,
  OWNER_QUEUE,
  REPOSITORY_QUEUE,
  SLICES_PER_WINDOW,
  halfOf,
  keptOf,
  SPREAD,
  spreadOf,
  stampOf,
  type Admission,
  type Reservation,
  type Tenant,
} from "../server/github/points-pacer.js";

const WINDOW_MS = 60_000;
const stamp = (at: number) => stampOf(at, WINDOW_MS / SLICES_PER_WINDOW);
const APP = "app:1";
/** Owner 10 has two repositories; 20 and 30 one each; "broker": the broker's own calls (no tenant). */
const TENANTS: ReadonlyArray<Tenant | null> = [
  { owner: "10", repository: "101" },
  { owner: "10", repository: "102" },
  { owner: "20", repository: "201" },
  { owner: "30", repository: "301" },
  null,
];
const ownerOf = (tenant: Tenant | null) => tenant?.owner ?? "broker";
const laneOf = (tenant: Tenant | null) => (tenant ? `${tenant.owner}/${tenant.repository}` : "broker");

type Op =
  | { op: "call"; who: number; points: 1 | 5; abortable: boolean }
  | { op: "advance"; ms: number }
  | { op: "abort"; pick: number }
  | { op: "settle"; pick: number; sent: boolean }
  | { op: "admit"; who: number }
  | { op: "done"; pick: number };

const ops: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant("call" as const), who: fc.nat(TENANTS.length - 1), points: fc.constantFrom(1 as const, 5 as const), abortable: fc.boolean() }) },
  { weight: 2, arbitrary: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 70_000 }), fc.constantFrom(1, WINDOW_MS - 1, WINDOW_MS)).map((ms) => ({ op: "advance" as const, ms })) },
  { weight: 1, arbitrary: fc.nat(20).map((pick) => ({ op: "abort" as const, pick })) },
  { weight: 3, arbitrary: fc.tuple(fc.nat(20), fc.boolean()).map(([pick, sent]) => ({ op: "settle" as const, pick, sent: sent || pick % 3 !== 0 })) },
  { weight: 2, arbitrary: fc.nat(TENANTS.length - 2).map((who) => ({ op: "admit" as const, who })) },
  { weight: 1, arbitrary: fc.nat(20).map((pick) => ({ op: "done" as const, pick })) },
);

/** Time running on by tenths of the window: owners grow past their half while others wait. */
const timedOps: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: ops },
  { weight: 2, arbitrary: fc.constantFrom(WINDOW_MS * SPREAD, WINDOW_MS * SPREAD + 1, 3_000).map((ms) => ({ op: "advance" as const, ms })) },
  { weight: 2, arbitrary: fc.tuple(fc.nat(20)).map(([pick]) => ({ op: "settle" as const, pick, sent: true })) },
);

interface Call {
  id: number;
  tenant: Tenant | null;
  points: number;
  controller?: AbortController;
  state: "waiting" | "granted" | "rejected";
  reservation?: Reservation;
  grantedAt?: number;
  /** When its answer came in; undefined while out; null if refunded (never sent). */
  settledAt?: number | null;
  rejection?: unknown;
}

class World {
  clock = 1_800_000_000_000;
  timers: Array<{ due: number; wake: () => void; live: boolean }> = [];
  calls: Call[] = [];
  grantOrder: number[] = [];
  admissions: Array<{ tenant: Tenant; admission: Admission; done: boolean }> = [];
  pacer;
  readonly budget: number;

  constructor(setting: number) {
    this.budget = Math.max(MAX_CALL_POINTS, setting);
    this.pacer = createPointsPacer({
      budget: () => setting,
      now: () => this.clock,
      windowMs: WINDOW_MS,
      setTimer: (wake, ms) => {
        const timer = { due: this.clock + ms, wake, live: true };
        this.timers.push(timer);
        return () => {
          timer.live = false;
        };
      },
    });
  }

  call(who: number, points: number, abortable: boolean) {
    const tenant = TENANTS[who]!;
    const call: Call = { id: this.calls.length, tenant, points, state: "waiting", controller: abortable ? new AbortController() : undefined };
    this.calls.push(call);
    this.pacer.reserve(APP, points, call.controller?.signal, tenant ?? undefined).then(
      (reservation) => {
        expect(call.state).toBe("waiting");
        call.state = "granted";
        call.reservation = reservation;
        call.grantedAt = this.clock;
        this.grantOrder.push(call.id);
        // Callbacks run in grant order: the calls still "waiting" here were waiting at its grant.
        this.checkGrant(call);
      },
      (reason) => {
        expect(call.state).toBe("waiting");
        call.state = "rejected";
        call.rejection = reason;
      },
    );
  }

  /** Points the pacer must count now for the calls `match` picks: out, or answered within the window. */
  used(match: (call: Call) => boolean): number {
    return this.calls
      .filter((c) => match(c) && c.state === "granted" && c.settledAt !== null)
      .filter((c) => c.settledAt === undefined || stamp(c.settledAt!) > this.clock - WINDOW_MS)
      .reduce((sum, c) => sum + c.points, 0);
  }

  waitingOwners(): Set<string> {
    return new Set(this.calls.filter((c) => c.state === "waiting").map((c) => ownerOf(c.tenant)));
  }

  waitingLanes(owner: string): Set<string> {
    return new Set(this.calls.filter((c) => c.state === "waiting" && ownerOf(c.tenant) === owner).map((c) => laneOf(c.tenant)));
  }

  /** Points the pacer counts in the last tenth of the window for the calls `match` picks: out, or answered within it. */
  recent(match: (call: Call) => boolean): number {
    return this.calls
      .filter((c) => match(c) && c.state === "granted" && c.settledAt !== null)
      .filter((c) => c.settledAt === undefined || stamp(c.settledAt!) > this.clock - WINDOW_MS * SPREAD)
      .reduce((sum, c) => sum + c.points, 0);
  }

  /**
   * Whether the rules let `points` more through for `tenant` now: an owner past half of the budget
   * only with no other owner waiting and a tenth of the budget left free, a repository past half of
   * its owner's widest part only with no other repository of its owner waiting and a tenth of that
   * part left free; a tenth of the widest part in a tenth of the window.
   */
  allows(tenant: Tenant, points: number): boolean {
    const owner = tenant.owner;
    const lane = laneOf(tenant);
    const ownerWidest = keptOf(this.budget);
    const laneWidest = keptOf(ownerWidest);
    const ownerUsed = this.used((c) => ownerOf(c.tenant) === owner) + points;
    const laneUsed = this.used((c) => laneOf(c.tenant) === lane) + points;
    const total = this.used(() => true) + points;
    const othersWaiting = [...this.waitingOwners()].some((other) => other !== owner);
    const lanesWaiting = [...this.waitingLanes(owner)].some((other) => other !== lane);
    const ownerOk = ownerUsed <= halfOf(this.budget) || (!othersWaiting && total <= ownerWidest);
    const laneOk = laneUsed <= halfOf(ownerWidest) || (!lanesWaiting && ownerUsed <= laneWidest);
    const { ownerSpread, laneSpread } = this.spreadApplies(tenant);
    const spreadOk =
      (!ownerSpread || this.recent((c) => ownerOf(c.tenant) === owner) + points <= spreadOf(ownerWidest)) &&
      (!laneSpread || this.recent((c) => laneOf(c.tenant) === lane) + points <= spreadOf(laneWidest));
    return ownerOk && laneOk && spreadOk;
  }

  /** An owner is spread while another owner has points in the window or waits; a repository while another of its owner's waits. */
  spreadApplies(tenant: Tenant): { ownerSpread: boolean; laneSpread: boolean } {
    const owner = tenant.owner;
    const othersWaiting = [...this.waitingOwners()].some((other) => other !== owner);
    const othersActive = this.calls.some((c) => ownerOf(c.tenant) !== owner && this.used((d) => d === c) > 0);
    return { ownerSpread: othersWaiting || othersActive, laneSpread: [...this.waitingLanes(owner)].some((other) => other !== laneOf(tenant)) };
  }

  checkGrant(call: Call) {
    if (!call.tenant) return;
    const owner = ownerOf(call.tenant);
    const lane = laneOf(call.tenant);
    const ownerUsed = this.used((c) => ownerOf(c.tenant) === owner);
    const laneUsed = this.used((c) => laneOf(c.tenant) === lane);
    const total = this.used(() => true);
    const othersWaiting = [...this.waitingOwners()].some((other) => other !== owner);
    const lanesWaiting = [...this.waitingLanes(owner)].some((other) => other !== lane);
    const ownerWidest = keptOf(this.budget);
    const laneWidest = keptOf(ownerWidest);
    expect(this.budget - ownerWidest).toBe(Math.floor(this.budget * HEADROOM));
    expect(halfOf(this.budget)).toBe(Math.max(MAX_CALL_POINTS, Math.floor(this.budget * FAIR_SHARE)));
    const where = `call ${call.id} (owner ${ownerUsed}, repository ${laneUsed}, window ${total} of ${this.budget})`;
    if (ownerUsed > halfOf(this.budget)) {
      if (othersWaiting) throw new Error(`owner ${owner} granted past half the budget while another owner waits: ${where}`);
      if (total > ownerWidest) throw new Error(`owner ${owner} granted past half the budget leaving less than the headroom free: ${where}`);
    }
    if (laneUsed > halfOf(ownerWidest)) {
      if (lanesWaiting) throw new Error(`repository ${lane} granted past half its owner's part while another of its owner's repositories waits: ${where}`);
      if (ownerUsed > laneWidest) throw new Error(`repository ${lane} granted past half its owner's part leaving less than its headroom: ${where}`);
    }
    const ownerRecent = this.recent((c) => ownerOf(c.tenant) === owner);
    const laneRecent = this.recent((c) => laneOf(c.tenant) === lane);
    const { ownerSpread, laneSpread } = this.spreadApplies(call.tenant);
    if ((ownerSpread && ownerRecent > spreadOf(ownerWidest)) || (laneSpread && laneRecent > spreadOf(laneWidest))) throw new Error(`${lane} took ${laneRecent} (owner ${ownerRecent}) in a tenth of the window: ${where}`);
  }

  async advance(ms: number) {
    const target = this.clock + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.live && t.due <= target).sort((a, b) => a.due - b.due)[0];
      if (!due) break;
      due.live = false;
      this.clock = Math.max(this.clock, due.due);
      due.wake();
      await flush();
    }
    this.clock = target;
    this.timers = this.timers.filter((t) => t.live);
  }

  abort(pick: number) {
    const waiting = this.calls.filter((c) => c.state === "waiting" && c.controller);
    const call = waiting[pick % Math.max(1, waiting.length)];
    call?.controller!.abort(new Error(`deadline of call ${call.id}`));
  }

  settle(pick: number, sent: boolean) {
    const out = this.calls.filter((c) => c.state === "granted" && c.settledAt === undefined);
    const call = out[pick % Math.max(1, out.length)];
    if (!call) return;
    call.settledAt = sent ? this.clock : null;
    call.reservation!.settle(sent);
  }

  admit(who: number) {
    const tenant = TENANTS[who]!;
    const held = this.admissions.filter((a) => !a.done);
    const laneHeld = held.filter((a) => laneOf(a.tenant) === laneOf(tenant)).length;
    const ownerHeld = held.filter((a) => a.tenant.owner === tenant.owner).length;
    const laneWaits = this.calls.some((c) => c.state === "waiting" && laneOf(c.tenant) === laneOf(tenant));
    const answer = this.pacer.admit(APP, tenant, MAX_CALL_POINTS);
    if (laneHeld < REPOSITORY_QUEUE && ownerHeld < OWNER_QUEUE) expect("done" in answer).toBe(true);
    if (laneHeld >= REPOSITORY_QUEUE && laneWaits) expect("retryAfterMs" in answer).toBe(true);
    if ("retryAfterMs" in answer) expect(answer.retryAfterMs).toBeGreaterThanOrEqual(1000);
    else this.admissions.push({ tenant, admission: answer, done: false });
  }

  done(pick: number) {
    const held = this.admissions.filter((a) => !a.done);
    const one = held[pick % Math.max(1, held.length)];
    if (!one) return;
    one.done = true;
    one.admission.done();
    one.admission.done(); // once: a second call changes nothing
  }

  checkSafety() {
    const sent = this.calls.filter((c) => c.state === "granted" && c.settledAt !== null);
    for (const x of sent) {
      const overlapping = sent.filter((y) => y.grantedAt! <= x.grantedAt! && (y.settledAt === undefined || y.settledAt! > x.grantedAt! - WINDOW_MS));
      const points = overlapping.reduce((sum, y) => sum + y.points, 0);
      if (points > this.budget) throw new Error(`${points} points in one window > ${this.budget} (at call ${x.id})`);
    }
  }

  /** With room in the window for every waiting call, none waits that its shares would let through now. */
  checkWorkConserving() {
    const waiting = this.calls.filter((c) => c.state === "waiting");
    if (waiting.length === 0) return;
    const total = this.used(() => true);
    if (total + Math.max(...waiting.map((c) => c.points)) > this.budget) return;
    const heads = new Map<string, Call>();
    for (const call of waiting) if (!heads.has(laneOf(call.tenant))) heads.set(laneOf(call.tenant), call);
    for (const head of heads.values()) {
      if (!head.tenant) throw new Error(`the broker's call ${head.id} waits with room for it`);
      if (this.allows(head.tenant, head.points)) throw new Error(`${JSON.stringify(this.calls.map((c) => [c.id, c.tenant?.owner, c.points, c.state, c.grantedAt && c.grantedAt - 1_800_000_000_000, c.settledAt && c.settledAt - 1_800_000_000_000]))} now ${this.clock - 1_800_000_000_000} timers ${JSON.stringify(this.timers.filter((t) => t.live).map((t) => t.due - 1_800_000_000_000))}` + `call ${head.id} of ${laneOf(head.tenant)} waits though its shares let it through (window ${total} of ${this.budget})`);
    }
  }

  checkFifoPerRepository() {
    for (const lane of new Set(this.calls.map((c) => laneOf(c.tenant)))) {
      const served = this.grantOrder.filter((id) => laneOf(this.calls[id]!.tenant) === lane);
      expect(served).toEqual([...served].sort((a, b) => a - b));
    }
  }
}

const flush = async () => {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
};

async function run(budget: number, steps: readonly Op[]) {
  const world = new World(budget);
  for (const step of steps) {
    if (step.op === "call") world.call(step.who, step.points, step.abortable);
    else if (step.op === "advance") await world.advance(step.ms);
    else if (step.op === "abort") world.abort(step.pick);
    else if (step.op === "settle") world.settle(step.pick, step.sent);
    else if (step.op === "admit") world.admit(step.who);
    else world.done(step.pick);
    await flush();
    world.checkSafety();
    world.checkWorkConserving();
  }
  for (let round = 0; round < world.calls.length + 3 && world.calls.some((c) => c.state === "waiting"); round += 1) {
    for (const call of world.calls.filter((c) => c.state === "granted" && c.settledAt === undefined)) {
      call.settledAt = world.clock;
      call.reservation!.settle(true);
    }
    await flush();
    // A window and a slice: an answer's points stay until the end of its slice plus the window, so
    // an answer off a slice's edge (after a 1 ms clock move) frees its points only after a full window.
    await world.advance(WINDOW_MS + WINDOW_MS / SLICES_PER_WINDOW);
    await flush();
    world.checkSafety();
  }
  expect(world.calls.filter((c) => c.state === "waiting").map((c) => c.id)).toEqual([]);
  for (const call of world.calls.filter((c) => c.state === "rejected")) {
    expect(call.controller?.signal.aborted).toBe(true);
    expect(call.rejection).toBe(call.controller!.signal.reason);
  }
  expect(world.pacer.waiting).toBe(0);
  world.checkFifoPerRepository();
  return world;
}

describe("points pacer's fair shares, model-based", () => {
  it("never past the budget; no owner (repository) granted past its share while another waits, nor past the headroom alone; work-conserving; every waiter served or aborted", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(MAX_CALL_POINTS, 12, 30, 100), fc.array(ops, { maxLength: 90 }), async (budget, steps) => {
        await run(budget, steps);
      }),
      { numRuns: 300 },
    );
  });

  it("the same, time running on by tenths of the window (owners past half their part while others come)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(30, 100), fc.array(timedOps, { minLength: 40, maxLength: 160 }), async (budget, steps) => {
        await run(budget, steps);
      }),
      { numRuns: 200 },
    );
  });

  it("alone a burst goes at once; with another owner about, a flood is spread (a tenth of its part in a tenth of the window) and the other's calls go at once", async () => {
    const alone = new World(1000);
    for (let i = 0; i < 40; i += 1) alone.call(0, 5, false);
    await flush();
    expect(alone.calls.filter((c) => c.state === "granted")).toHaveLength(40);

    const world = new World(1000);
    world.call(2, 5, false); // owner 20 has points in the window
    await flush();
    // Owner 10's widest part: 900 of 1000; 90 of it in any 6 s.
    for (let i = 0; i < 40; i += 1) world.call(0, 5, false);
    await flush();
    expect(world.calls.slice(1, 41).filter((c) => c.state === "granted")).toHaveLength(18);
    for (const call of world.calls.filter((c) => c.state === "granted")) world.settle(0, true);
    // Owner 20 is let through at once; owner 10's other repository waits for its owner's next tenth.
    for (let i = 0; i < 4; i += 1) world.call(2, 5, false);
    world.call(1, 5, false);
    await flush();
    expect(world.calls.slice(41).map((c) => c.state)).toEqual(["granted", "granted", "granted", "granted", "waiting"]);
    // A tenth of the window later owner 10 takes its next tenth, its other repository first.
    await world.advance(WINDOW_MS * SPREAD);
    await flush();
    expect(world.calls[45]!.state).toBe("granted");
    expect(world.calls.slice(1, 41).filter((c) => c.state === "granted")).toHaveLength(35);
  });

  it("a lone owner's repository over its share with its queue full is refused at once, another repository admitted", () => {
    const world = new World(100);
    const flood = TENANTS[0]!;
    for (let i = 0; i < REPOSITORY_QUEUE; i += 1) expect("done" in world.pacer.admit(APP, flood, 5)).toBe(true);
    // Its share still has room: a ninth request is admitted all the same (nothing waits).
    expect("done" in world.pacer.admit(APP, flood, 5)).toBe(true);
    for (let i = 0; i < 30; i += 1) world.call(0, 5, false); // spread: most of them wait
    const refused = world.pacer.admit(APP, flood, 5);
    expect("retryAfterMs" in refused).toBe(true);
    expect("done" in world.pacer.admit(APP, TENANTS[2]!, 5)).toBe(true);
  });
});
