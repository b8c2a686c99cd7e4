// A model-based test of the per-route budgets of bodies not yet authenticated (issue 24, item 1):
// server/http/body-budget.ts as server/http/json-body.ts's readBody takes from it. Random
// sequences of bodies opened on /token and /webhook (declared lengths, some over the route's limit,
// some chunked), bytes arriving, ends, aborts and releases, against a model that knows what each
// body has delivered. After every step:
// - each route's budget holds exactly the bytes its open bodies have delivered (and its ended
//   bodies not yet released), never a declared length, and never more than its limit;
// - a body is refused 413 exactly when it passes its route's limit (a declared length over it at
//   once), 503 server_busy exactly when its bytes would push its own route's budget over: what
//   the other route holds never refuses it (/webhook bodies cannot starve /token);
// - a refused or aborted body has given back every byte it took.
// The HTTP side (real broker, real sockets): test/hardening-body-budget.test.ts.
import { EventEmitter } from "node:events";
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { BrokerError } from "../shared/broker-error.js";
import { createBodyBudget, type BodyBudget } from "../server/http/body-budget.js";
import { readBody, type HeldBody } from "../server/http/json-body.js";

type Route = "token" | "webhook";
const ROUTES: Route[] = ["token", "webhook"];
// Small numbers in the real proportions (a /token body is far smaller than /webhook's, and
// /webhook's budget holds about two whole bodies) so that every refusal is reached often.
const LIMIT: Record<Route, number> = { token: 40, webhook: 300 };
const BUDGET: Record<Route, number> = { token: 120, webhook: 650 };

type State = "reading" | "ended" | "released" | "payload_too_large" | "server_busy" | "aborted";

interface Body {
  route: Route;
  declared: number | null;
  /** Bytes delivered so far (the model's view). */
  received: number;
  state: State;
  /** What readBody has said so far (the real side). */
  outcome?: { held?: HeldBody; code?: string };
  req: EventEmitter;
}

interface World {
  budgets: Record<Route, BodyBudget>;
  bodies: Body[];
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function modelHeld(world: World, route: Route): number {
  return world.bodies.filter((b) => b.route === route && (b.state === "reading" || b.state === "ended")).reduce((sum, b) => sum + b.received, 0);
}

function checkWorld(world: World): void {
  for (const route of ROUTES) {
    expect(world.budgets[route].held).toBe(modelHeld(world, route));
    expect(world.budgets[route].held).toBeLessThanOrEqual(BUDGET[route]);
  }
  for (const body of world.bodies) {
    const code = body.outcome?.code;
    if (body.state === "reading") expect(body.outcome).toBeUndefined();
    else if (body.state === "ended" || body.state === "released") expect(body.outcome?.held?.bytes.length).toBe(body.received);
    else if (body.state === "aborted") expect(code).toBe("invalid_request");
    else expect(code).toBe(body.state);
  }
}

class Open implements fc.AsyncCommand<World, World> {
  constructor(
    readonly route: Route,
    /** null: chunked (no declared length). */
    readonly declared: number | null,
  ) {}
  check() {
    return true;
  }
  async run(_model: World, world: World) {
    const req = new EventEmitter();
    const headers: Record<string, string> = this.declared === null ? { "transfer-encoding": "chunked" } : { "content-length": String(this.declared) };
    Object.assign(req, { headers });
    const body: Body = { route: this.route, declared: this.declared, received: 0, state: "reading", req };
    world.bodies.push(body);
    readBody(req as unknown as IncomingMessage, LIMIT[this.route], { budget: world.budgets[this.route] }).then(
      (held) => (body.outcome = { held }),
      (error: unknown) => (body.outcome = { code: error instanceof BrokerError ? error.code : String(error) }),
    );
    await settle();
    // A declared length is judged against the route's limit, and takes nothing from the budget.
    if (this.declared !== null && this.declared > LIMIT[this.route]) body.state = "payload_too_large";
    checkWorld(world);
  }
  toString() {
    return `open(${this.route}, ${this.declared ?? "chunked"})`;
  }
}

/** Commands on the index-th body (modulo the bodies opened so far). */
abstract class OnBody implements fc.AsyncCommand<World, World> {
  constructor(readonly index: number) {}
  check(world: Readonly<World>) {
    return world.bodies.length > 0;
  }
  body(world: World): Body {
    return world.bodies[this.index % world.bodies.length]!;
  }
  abstract run(model: World, world: World): Promise<void>;
}

class Send extends OnBody {
  constructor(index: number, readonly bytes: number) {
    super(index);
  }
  async run(_model: World, world: World) {
    const body = this.body(world);
    if (body.state !== "reading") return; // node:http delivers nothing after the end or an abort
    // node:http never delivers more than a declared length.
    const bytes = body.declared === null ? this.bytes : Math.min(this.bytes, body.declared - body.received);
    if (bytes === 0) return;
    const before = { token: world.budgets.token.held, webhook: world.budgets.webhook.held };
    body.req.emit("data", Buffer.alloc(bytes, "x"));
    await settle();
    const size = body.received + bytes;
    if (size > LIMIT[body.route]) body.state = "payload_too_large";
    else if (before[body.route] + bytes > BUDGET[body.route]) body.state = "server_busy";
    else body.received = size;
    if (body.state === "server_busy") {
      // Refused only because its own route's budget is full, whatever the other route holds.
      const other: Route = body.route === "token" ? "webhook" : "token";
      expect(before[body.route] + bytes).toBeGreaterThan(BUDGET[body.route]);
      expect(world.budgets[other].held).toBe(before[other]);
    }
    checkWorld(world);
  }
  override toString() {
    return `send(${this.index}, ${this.bytes})`;
  }
}

class End extends OnBody {
  async run(_model: World, world: World) {
    const body = this.body(world);
    if (body.state !== "reading") return;
    if (body.declared !== null && body.received < body.declared) return; // node:http ends a declared body only when it is all there
    body.req.emit("end");
    await settle();
    body.state = "ended"; // held until the route has consumed it
    checkWorld(world);
  }
  override toString() {
    return `end(${this.index})`;
  }
}

class Abort extends OnBody {
  async run(_model: World, world: World) {
    const body = this.body(world);
    if (body.state !== "reading") return;
    body.req.emit("aborted");
    body.req.emit("close");
    await settle();
    body.state = "aborted";
    checkWorld(world);
  }
  override toString() {
    return `abort(${this.index})`;
  }
}

class Release extends OnBody {
  async run(_model: World, world: World) {
    const body = this.body(world);
    if (body.state !== "ended" && body.state !== "released") return;
    body.outcome!.held!.release(); // idempotent: a second release gives nothing back twice
    body.state = "released";
    checkWorld(world);
  }
  override toString() {
    return `release(${this.index})`;
  }
}

describe("per-route budgets of unauthenticated bodies (model)", () => {
  it("hold exactly the bytes delivered, refuse only past a route's own limit or budget, and give every byte back", async () => {
    const route = fc.constantFrom<Route>(...ROUTES);
    const commands = [
      fc.tuple(route, fc.option(fc.integer({ min: 0, max: 400 }), { nil: null })).map(([r, declared]) => new Open(r, declared)),
      fc.tuple(fc.nat(), fc.integer({ min: 1, max: 120 })).map(([i, bytes]) => new Send(i, bytes)),
      fc.tuple(fc.nat(), fc.integer({ min: 1, max: 120 })).map(([i, bytes]) => new Send(i, bytes)),
      fc.nat().map((i) => new End(i)),
      fc.nat().map((i) => new Abort(i)),
      fc.nat().map((i) => new Release(i)),
    ];
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 60 }), async (cmds) => {
        const world: World = { budgets: { token: createBodyBudget(BUDGET.token), webhook: createBodyBudget(BUDGET.webhook) }, bodies: [] };
        await fc.asyncModelRun(() => ({ model: world, real: world }), cmds);
        // Every body still open goes away: nothing stays held.
        for (const body of world.bodies) {
          if (body.state === "reading") body.req.emit("close");
          if (body.state === "ended") body.outcome!.held!.release();
        }
        await settle();
        for (const r of ROUTES) expect(world.budgets[r].held).toBe(0);
      }),
      { numRuns: 300 },
    );
  });
});
