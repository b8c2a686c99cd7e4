// A model-based test of the points pacer (server/github/points-pacer.ts), the part of the upstream
// gate that keeps GitHub's REST points budget (issue 12): random sequences of calls (principal,
// 1 or 5 points, with or without an abort signal), answers coming in (sent) or calls given up
// before they went out (refunded), aborts and clock advances, run against the real pacer with a
// fake clock and fake timers. Invariants:
// - safety: for every principal, the points of calls sent (or still out) whose time at the
//   platform may fall in one window never exceed the budget: a call is out from its grant to its
//   answer, and any 60 s window it overlaps counts it;
// - no idle waiting: after every step, a principal's first waiter does not fit (else it would
//   have been served);
// - liveness: once time runs on and answers come in, every waiter is served or was rejected by
//   its own abort (with the signal's reason), never both;
// - FIFO per principal among the calls served;
// - earliestFit (what /token uses to refuse at once a call whose points cannot come before its
//   deadline) is a lower bound of when a new call is granted, until a waiter is aborted or a
//   reservation refunded (which it cannot foresee), and exact when it answers "now".
// Then a table of whose budget a call spends, as the gate describes calls.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createUpstreamGate } from "../server/github/upstream-gate.js";
import { createPointsPacer, MAX_CALL_POINTS, SLICES_PER_WINDOW, stampOf, type Reservation } from "../server/github/points-pacer.js";

const WINDOW_MS = 60_000;
/** The pacer counts an answer from the end of its 100 ms slice: so does the model. */
const stamp = (at: number) => stampOf(at, WINDOW_MS / SLICES_PER_WINDOW);
const PRINCIPALS = ["app:1", "installation:7", "installation:8"] as const;
type Principal = (typeof PRINCIPALS)[number];

type Op =
  | { op: "call"; principal: Principal; points: 1 | 5; abortable: boolean }
  | { op: "advance"; ms: number }
  | { op: "abort"; pick: number }
  | { op: "settle"; pick: number; sent: boolean };

const ops: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant("call" as const), principal: fc.constantFrom(...PRINCIPALS), points: fc.constantFrom(1 as const, 5 as const), abortable: fc.boolean() }) },
  { weight: 2, arbitrary: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 70_000 }), fc.constantFrom(1, WINDOW_MS - 1, WINDOW_MS)).map((ms) => ({ op: "advance" as const, ms })) },
  { weight: 1, arbitrary: fc.nat(20).map((pick) => ({ op: "abort" as const, pick })) },
  { weight: 3, arbitrary: fc.tuple(fc.nat(20), fc.boolean()).map(([pick, sent]) => ({ op: "settle" as const, pick, sent: sent || pick % 3 !== 0 })) },
);

interface Call {
  id: number;
  principal: Principal;
  points: number;
  controller?: AbortController;
  state: "waiting" | "granted" | "rejected";
  reservation?: Reservation;
  grantedAt?: number;
  /** When its answer came in; undefined while out; null if refunded (never sent). */
  settledAt?: number | null;
  rejection?: unknown;
  /** earliestFit's answer just before the call was made. */
  predictedFit?: number;
  madeAt?: number;
}

/** The pacer under a fake clock, with fake timers fired at their own time. */
class World {
  clock = 1_800_000_000_000;
  timers: Array<{ due: number; wake: () => void; live: boolean }> = [];
  calls: Call[] = [];
  grantOrder: number[] = [];
  /** Set once a waiter was aborted or a reservation refunded: earliestFit's bound counts neither. */
  freedUnforeseen = false;
  pacer;
  /** What the pacer goes by: never less than the dearest call. */
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

  call(principal: Principal, points: number, abortable: boolean) {
    const call: Call = { id: this.calls.length, principal, points, state: "waiting", controller: abortable ? new AbortController() : undefined };
    this.calls.push(call);
    call.predictedFit = this.pacer.earliestFit(principal, points);
    call.madeAt = this.clock;
    this.pacer.reserve(principal, points, call.controller?.signal).then(
      (reservation) => {
        expect(call.state).toBe("waiting");
        // earliestFit is a lower bound (while nothing ahead gave points back unforeseen), and exact when it says "now".
        if (call.predictedFit !== undefined && !this.freedUnforeseen) expect(this.clock).toBeGreaterThanOrEqual(call.predictedFit);
        call.state = "granted";
        call.reservation = reservation;
        call.grantedAt = this.clock;
        this.grantOrder.push(call.id);
      },
      (reason) => {
        expect(call.state).toBe("waiting");
        call.state = "rejected";
        call.rejection = reason;
      },
    );
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
    if (call) this.freedUnforeseen = true;
    call?.controller!.abort(new Error(`deadline of call ${call.id}`));
  }

  settle(pick: number, sent: boolean) {
    const out = this.calls.filter((c) => c.state === "granted" && c.settledAt === undefined);
    const call = out[pick % Math.max(1, out.length)];
    if (!call) return;
    call.settledAt = sent ? this.clock : null;
    if (!sent) this.freedUnforeseen = true;
    call.reservation!.settle(sent);
  }

  /** Points of `principal` the pacer must count now: calls out, and calls answered within the window. */
  used(principal: Principal): number {
    return this.calls
      .filter((c) => c.principal === principal && c.state === "granted" && c.settledAt !== null)
      .filter((c) => c.settledAt === undefined || stamp(c.settledAt!) > this.clock - WINDOW_MS)
      .reduce((sum, c) => sum + c.points, 0);
  }

  checkSafety() {
    for (const principal of PRINCIPALS) {
      const sent = this.calls.filter((c) => c.principal === principal && c.state === "granted" && c.settledAt !== null);
      for (const x of sent) {
        // Every call granted no later than x and still out, or answered within a window before x's grant.
        const overlapping = sent.filter((y) => y.grantedAt! <= x.grantedAt! && (y.settledAt === undefined || y.settledAt! > x.grantedAt! - WINDOW_MS));
        const points = overlapping.reduce((sum, y) => sum + y.points, 0);
        if (points > this.budget) throw new Error(`${principal}: ${points} points in one window > ${this.budget} (at call ${x.id})`);
      }
    }
  }

  checkNoIdleWaiting() {
    for (const principal of PRINCIPALS) {
      const head = this.calls.find((c) => c.principal === principal && c.state === "waiting");
      if (head && this.used(principal) + head.points <= this.budget) {
        throw new Error(`${principal}: call ${head.id} (${head.points} points) waits though ${this.used(principal)} of ${this.budget} are used`);
      }
    }
  }

  /** A call earliestFit said fits now was granted at once. */
  checkFitsNow() {
    for (const call of this.calls) {
      if (call.predictedFit !== undefined && call.predictedFit === call.madeAt) expect(call.grantedAt).toBe(call.madeAt);
    }
  }

  checkFifo() {
    for (const principal of PRINCIPALS) {
      const served = this.grantOrder.filter((id) => this.calls[id]!.principal === principal);
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
    if (step.op === "call") world.call(step.principal, step.points, step.abortable);
    else if (step.op === "advance") await world.advance(step.ms);
    else if (step.op === "abort") world.abort(step.pick);
    else world.settle(step.pick, step.sent);
    await flush();
    world.checkSafety();
    world.checkNoIdleWaiting();
    world.checkFitsNow();
  }
  // Time runs on and every answer comes in: everyone is served or was aborted.
  for (let round = 0; round < world.calls.length + 3 && world.calls.some((c) => c.state === "waiting"); round += 1) {
    for (const call of world.calls.filter((c) => c.state === "granted" && c.settledAt === undefined)) {
      call.settledAt = world.clock;
      call.reservation!.settle(true);
    }
    await flush();
    await world.advance(WINDOW_MS);
    await flush();
    world.checkSafety();
  }
  expect(world.calls.filter((c) => c.state === "waiting").map((c) => c.id)).toEqual([]);
  for (const call of world.calls.filter((c) => c.state === "rejected")) {
    expect(call.controller?.signal.aborted).toBe(true);
    expect(call.rejection).toBe(call.controller!.signal.reason);
  }
  expect(world.pacer.waiting).toBe(0);
  world.checkFifo();
  return world;
}

describe("points pacer, model-based", () => {
  it("never lets a principal's calls exceed its budget in any window; serves FIFO per principal; never idles; every waiter is served or aborted", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(MAX_CALL_POINTS, 6, 12, 30), fc.array(ops, { maxLength: 80 }), async (budget, steps) => {
        await run(budget, steps);
      }),
      { numRuns: 300 },
    );
  });

  it("a budget below the dearest call is raised to it (a 5-point call could never go out otherwise)", async () => {
    const world = await run(1, [
      { op: "call", principal: "app:1", points: 5, abortable: false },
      { op: "call", principal: "app:1", points: 1, abortable: false },
    ]);
    expect(world.grantOrder).toEqual([0, 1]);
  });

  it("one principal out of points never holds back another", async () => {
    const world = new World(10);
    world.call("app:1", 5, false);
    world.call("app:1", 5, false);
    world.call("app:1", 5, false); // waits: 10 of 10 used
    world.call("installation:7", 5, false);
    await flush();
    expect(world.calls.map((c) => c.state)).toEqual(["granted", "granted", "waiting", "granted"]);
  });

  it("a refund frees the points at once; a sent call's points free a window after its answer", async () => {
    const world = new World(5);
    world.call("app:1", 5, false);
    world.call("app:1", 5, false);
    await flush();
    world.settle(0, false); // never went out
    await flush();
    expect(world.calls[1]!.state).toBe("granted");
    world.call("app:1", 5, false);
    await world.advance(10_000);
    world.settle(0, true); // call 1 answered at +10 s
    await world.advance(WINDOW_MS - 1);
    expect(world.calls[2]!.state).toBe("waiting");
    await world.advance(1);
    await flush();
    expect(world.calls[2]!.state).toBe("granted");
    expect(world.calls[2]!.grantedAt).toBe(stamp(world.calls[1]!.settledAt!) + WINDOW_MS);
  });

  it("wakes each principal when its own window frees, not at the latest of them", async () => {
    const world = new World(5);
    world.call("app:1", 5, false);
    world.call("installation:7", 5, false);
    await flush();
    world.settle(0, true); // the App's call answered at 0 s
    await world.advance(20_000);
    world.settle(0, true); // the installation's at 20 s
    world.call("app:1", 5, false);
    world.call("installation:7", 5, false);
    await world.advance(WINDOW_MS - 20_000);
    await flush();
    world.checkNoIdleWaiting();
    expect(world.calls.map((c) => c.state)).toEqual(["granted", "granted", "granted", "waiting"]);
    await world.advance(20_000);
    await flush();
    expect(world.calls[3]!.state).toBe("granted");
  });
});

describe("whose budget a call spends (the gate's description of a call)", () => {
  const gate = createUpstreamGate({ limit: () => 50, now: () => Date.parse("2026-06-01T12:00:00Z") });
  const jwt = (payload: object) => `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.c2ln`;
  const API = "https://api.github.com";
  gate.principals.noteMint("42", { token: "ghs_minted", expires_at: "2026-06-01T13:00:00Z" }, "app:123");

  it.each([
    ["GET", `${API}/repos/o/r/installation`, `Bearer ${jwt({ iss: "123" })}`, { kind: "lookup", principal: "app:123", points: 1, caller: "app:123", app: "app:123" }],
    ["POST", `${API}/app/installations/42/access_tokens`, `Bearer ${jwt({ iss: 123 })}`, { kind: "mint", principal: "app:123", points: 5, caller: "app:123", app: "app:123" }],
    ["GET", `${API}/app/installations?per_page=100&page=2`, `Bearer ${jwt({ iss: "123" })}`, { kind: "read", principal: "app:123", points: 1, caller: "app:123", app: "app:123" }],
    ["GET", `${API}/installation/repositories?per_page=100`, "token ghs_minted", { kind: "read", principal: "installation:42", points: 1, caller: "installation:42", app: "app:123" }],
    ["PUT", `${API}/repos/o/r/pulls/1/update-branch`, "token ghs_minted", { kind: "update-branch", principal: "installation:42", points: 5, caller: "installation:42", app: "app:123" }],
    ["DELETE", `${API}/installation/token`, "Bearer ghs_minted", { kind: "write", principal: "installation:42", points: 5, caller: "installation:42", app: "app:123" }],
    ["POST", `${API}/graphql`, "token ghs_minted", { kind: "graphql", principal: null, points: 0, caller: "installation:42", app: "app:123" }], // GraphQL's own budget
    ["GET", `${API}/repos/o/r`, undefined, { kind: "read", principal: null, points: 0, caller: null, app: null }],
  ])("%s %s (%s)", (method, url, authorization, expected) => {
    expect(gate.describe(method, url, authorization)).toEqual(expected);
  });

  it("a token it did not see minted is a budget of its own, named by its hash, never the token", () => {
    const principal = gate.describe("GET", `${API}/installation/repositories`, "token ghs_unknown").principal!;
    expect(principal).toMatch(/^token:[A-Za-z0-9_-]{43}$/);
    expect(principal).not.toContain("ghs_unknown");
  });
});
