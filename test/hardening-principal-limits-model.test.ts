// A model-based test (fast-check commands) of the upstream gate's rate-limit pauses
// (server/github/upstream-gate.ts), issue 24 item 3: the App JWT and two installations of one App,
// each calling REST and GraphQL, under a fake clock. Random sequences of the platform's answers —
// a primary limit (403/429, or a 200, with `x-ratelimit-remaining: 0` and `x-ratelimit-reset`,
// with or without `x-ratelimit-resource`), a secondary limit (`retry-after`, or GitHub's message
// alone: a minute), a plain 403, a success — and clock moves. After every step, for every caller
// and API, the gate holds a call exactly when the model says:
// - a primary limit holds only its own principal's calls of its own API (REST's `core` or GraphQL),
//   until its reset: installation 7 is never held by installation 8's limit, nor by the App JWT's;
// - a secondary limit holds every call of the App (JWT and both installations, both APIs) until its
//   wait is over;
// - a refusal's Retry-After is the longest wait in force for that call, in whole seconds (at least 1).
// The HTTP side is test/hardening-principal-limits.test.ts.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createUpstreamGate, type UpstreamGate } from "../server/github/upstream-gate.js";

const START = 1_800_000_000_000;
const API = "https://api.github.example";
const jwt = `eyJhbGciOiJSUzI1NiJ9.${Buffer.from(JSON.stringify({ iss: "1" })).toString("base64url")}.c2ln`;
const CALLERS = { app: `Bearer ${jwt}`, seven: "token ghs_seven", eight: "token ghs_eight" } as const;
type Caller = keyof typeof CALLERS;
type Api = "core" | "graphql";
const CALLER_NAMES = Object.keys(CALLERS) as Caller[];

const callOf = (gate: UpstreamGate, caller: Caller, api: Api) =>
  api === "graphql" ? gate.describe("POST", `${API}/graphql`, CALLERS[caller]) : gate.describe("GET", caller === "app" ? `${API}/app/installations` : `${API}/installation/repositories`, CALLERS[caller]);

interface World {
  clock: number;
  gate: UpstreamGate;
}
interface Model {
  /** `caller/api` → epoch ms its primary limit ends. */
  primary: Map<string, number>;
  /** When the App's secondary limit ends. */
  secondary: number;
}

type Answer =
  | { kind: "primary"; status: 200 | 403 | 429; resetInS: number; namesResource: boolean }
  | { kind: "secondary"; retryAfterS: number | null }
  | { kind: "plain403" }
  | { kind: "ok" };

class Observe implements fc.Command<Model, World> {
  constructor(readonly caller: Caller, readonly api: Api, readonly answer: Answer) {}
  check = () => true;
  run(model: Model, world: World) {
    const { gate, clock } = world;
    const call = callOf(gate, this.caller, this.api);
    const answer = this.answer;
    if (answer.kind === "primary") {
      const reset = Math.floor(clock / 1000) + answer.resetInS;
      const headers = new Headers({ "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset) });
      if (answer.namesResource) headers.set("x-ratelimit-resource", this.api);
      gate.observe(call, answer.status, headers, JSON.stringify({ message: "API rate limit exceeded" }));
      const key = `${this.caller}/${this.api}`;
      if (reset * 1000 > clock) model.primary.set(key, Math.max(model.primary.get(key) ?? 0, reset * 1000));
    } else if (answer.kind === "secondary") {
      const headers = new Headers(answer.retryAfterS === null ? {} : { "retry-after": String(answer.retryAfterS) });
      gate.observe(call, 403, headers, JSON.stringify({ message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." }));
      const waitMs = answer.retryAfterS === null ? 60_000 : answer.retryAfterS * 1000;
      if (waitMs > 0) model.secondary = Math.max(model.secondary, clock + waitMs);
    } else if (answer.kind === "plain403") {
      gate.observe(call, 403, new Headers({ "x-ratelimit-remaining": "12" }), JSON.stringify({ message: "Resource not accessible by integration" }));
    } else {
      gate.observe(call, 200, new Headers({ "x-ratelimit-remaining": "4999" }), "{}");
    }
    checkAll(model, world);
  }
  toString = () => `observe(${this.caller}, ${this.api}, ${JSON.stringify(this.answer)})`;
}

class Advance implements fc.Command<Model, World> {
  constructor(readonly ms: number) {}
  check = () => true;
  run(model: Model, world: World) {
    world.clock += this.ms;
    checkAll(model, world);
  }
  toString = () => `advance(${this.ms})`;
}

function checkAll(model: Model, world: World): void {
  for (const caller of CALLER_NAMES) {
    for (const api of ["core", "graphql"] as const) {
      const call = callOf(world.gate, caller, api);
      const ends = Math.max(model.primary.get(`${caller}/${api}`) ?? 0, model.secondary);
      const leftMs = ends - world.clock;
      const expected = leftMs > 0 ? { refused: true, retryAfterSeconds: Math.max(1, Math.ceil(leftMs / 1000)), why: "rate limited" } : null;
      expect({ caller, api, paused: world.gate.paused(call) }).toEqual({ caller, api, paused: expected });
      // `enter` refuses exactly what `paused` refuses (a slot is free: limit 10, nothing held).
      const entered = world.gate.tryEnter(call);
      if (expected) expect(entered).toEqual(expected);
      else {
        expect(typeof entered).toBe("function");
        (entered as () => void)();
      }
    }
  }
}

const answers: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("primary" as const), status: fc.constantFrom(200 as const, 403 as const, 429 as const), resetInS: fc.integer({ min: -5, max: 120 }), namesResource: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("secondary" as const), retryAfterS: fc.option(fc.integer({ min: 0, max: 90 }), { nil: null }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "plain403" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "ok" as const }) },
);

describe("the gate's rate-limit pauses, two installations and the App JWT", () => {
  it("hold a principal's own calls for its primary limit, and the whole App's for a secondary one", () => {
    const commands = [
      fc.tuple(fc.constantFrom(...CALLER_NAMES), fc.constantFrom<Api>("core", "graphql"), answers).map(([caller, api, answer]) => new Observe(caller, api, answer)),
      fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 130_000 }), fc.constantFrom(999, 1_000, 60_000)).map((ms) => new Advance(ms)),
    ];
    fc.assert(
      fc.property(fc.commands(commands, { maxCommands: 40 }), (cmds) => {
        const world: World = { clock: START, gate: undefined as unknown as UpstreamGate };
        world.gate = createUpstreamGate({ limit: () => 10, now: () => world.clock });
        const expires = new Date(START + 3_600_000).toISOString();
        world.gate.principals.noteMint("7", { token: "ghs_seven", expires_at: expires }, "app:1");
        world.gate.principals.noteMint("8", { token: "ghs_eight", expires_at: expires }, "app:1");
        fc.modelRun(() => ({ model: { primary: new Map(), secondary: 0 }, real: world }), cmds);
      }),
      { numRuns: 400 },
    );
  });

  it("an installation whose App it never saw minted is held by its own limits only", () => {
    let clock = START;
    const gate = createUpstreamGate({ limit: () => 10, now: () => clock });
    const stranger = gate.describe("GET", `${API}/installation/repositories`, "token ghs_unknown");
    gate.observe(stranger, 403, new Headers({ "retry-after": "30" }), "{}");
    expect(gate.paused(stranger)).toEqual({ refused: true, retryAfterSeconds: 30, why: "rate limited" });
    expect(gate.paused(callOf(gate, "app", "core"))).toBeNull();
    clock += 30_000;
    expect(gate.paused(stranger)).toBeNull();
  });
});
