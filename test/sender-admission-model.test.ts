// A model-based test of admission per sender (server/http/sender-admission.ts): random sequences
// of arrivals from three senders, clients going away while they wait, clock moves (with timers
// firing at their own time) and changes of the rate, against the real admission with a fake clock.
// Invariants:
// - safety: a sender never starts more than `rate` requests plus its bucket (one second's worth)
//   in any stretch of time its rate held for;
// - FIFO per sender among the requests started after waiting, and each request starts at most
//   once, is refused at most once, never both;
// - a refusal only with at least two seconds' worth of the sender's requests in its queue;
// - a request whose client went away before its turn never starts;
// - liveness: once time runs on, every waiting request whose client is still there starts.
import type { IncomingMessage, ServerResponse } from "node:http";
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { admitSenders } from "../server/http/sender-admission.js";
import { createLogger } from "../server/log.js";
import { Writable } from "node:stream";

const SENDERS = ["192.0.2.1", "192.0.2.2", "2001:db8:1:2::1"] as const;

type Op =
  | { op: "arrive"; sender: number; count: number }
  | { op: "leave"; pick: number }
  | { op: "advance"; ms: number }
  | { op: "rate"; rate: number };

const ops: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant("arrive" as const), sender: fc.nat(SENDERS.length - 1), count: fc.integer({ min: 1, max: 12 }) }) },
  { weight: 1, arbitrary: fc.nat(40).map((pick) => ({ op: "leave" as const, pick })) },
  { weight: 3, arbitrary: fc.oneof(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 0, max: 3_000 })).map((ms) => ({ op: "advance" as const, ms })) },
  { weight: 1, arbitrary: fc.constantFrom(1, 2, 3, 5).map((rate) => ({ op: "rate" as const, rate })) },
);

interface Req {
  id: number;
  sender: number;
  arrivedAt: number;
  /** Requests of its sender waiting (started neither nor refused) when it arrived, itself not counted. */
  queuedBefore: number;
  state: "waiting" | "started" | "refused";
  gone: boolean;
  startedAt?: number;
  /** Order among every start and rate change. */
  startedSeq?: number;
  waited: boolean;
  rateAtArrival: number;
}

class World {
  clock = 1_800_000_000_000;
  rate = 2;
  timers: Array<{ due: number; wake: () => void }> = [];
  reqs: Req[] = [];
  /** Rate changes, to judge safety only over stretches with one rate. */
  seq = 0;
  rateChangedSeq = 0;
  admit;

  constructor() {
    const log = createLogger({ level: "silent", destination: new Writable({ write: (_c, _e, done) => done() }) });
    this.admit = admitSenders(
      (req) => {
        const r = this.reqs[Number((req as unknown as { id: number }).id)]!;
        expect(r.state).toBe("waiting");
        expect(r.gone).toBe(false);
        r.state = "started";
        r.startedAt = this.clock;
        r.startedSeq = ++this.seq;
      },
      { limits: () => ({ rate: this.rate, trustProxyHops: 0 }), now: () => this.clock, log, setTimer: (wake, ms) => void this.timers.push({ due: this.clock + ms, wake }) },
    );
  }

  arrive(sender: number) {
    const id = this.reqs.length;
    const queuedBefore = this.reqs.filter((r) => r.sender === sender && r.state === "waiting").length;
    const r: Req = { id, sender, arrivedAt: this.clock, queuedBefore, state: "waiting", gone: false, waited: false, rateAtArrival: this.rate };
    this.reqs.push(r);
    const req = { id, url: "/token", headers: {}, socket: { remoteAddress: SENDERS[sender] }, get destroyed() { return r.gone; } } as unknown as IncomingMessage;
    const res = {
      get destroyed() { return r.gone; },
      writableEnded: false,
      writeHead() {
        expect(r.state).toBe("waiting");
        r.state = "refused";
        return this;
      },
      end() {},
    } as unknown as ServerResponse;
    this.admit(req, res);
    if (r.state === "waiting") r.waited = true;
  }

  advance(ms: number) {
    const target = this.clock + ms;
    for (;;) {
      this.timers.sort((a, b) => a.due - b.due);
      const next = this.timers[0];
      if (!next || next.due > target) break;
      this.timers.shift();
      this.clock = Math.max(this.clock, next.due);
      next.wake();
    }
    this.clock = target;
  }

  check() {
    for (const r of this.reqs) {
      if (r.state === "refused") expect(r.queuedBefore).toBeGreaterThanOrEqual(Math.ceil(r.rateAtArrival * 2));
      if (r.gone) expect(r.state === "started" && r.startedAt! <= this.clock).toBe(r.state === "started");
    }
    for (let s = 0; s < SENDERS.length; s += 1) {
      const started = this.reqs.filter((r) => r.sender === s && r.state === "started" && r.startedSeq! > this.rateChangedSeq);
      // Safety over every stretch [a, b] since the rate last changed: starts ≤ rate × (b − a) + rate, + 1 for the start that opened it.
      const times = started.map((r) => r.startedAt!).sort((a, b) => a - b);
      for (let i = 0; i < times.length; i += 1) {
        for (let j = i; j < times.length; j += 1) {
          const allowed = (this.rate * (times[j]! - times[i]!)) / 1000 + this.rate + 1;
          expect(j - i + 1).toBeLessThanOrEqual(Math.ceil(allowed));
        }
      }
      // FIFO among those that waited.
      const waitedStarts = this.reqs.filter((r) => r.sender === s && r.waited && r.state === "started");
      const byStart = [...waitedStarts].sort((a, b) => a.startedAt! - b.startedAt! || a.id - b.id);
      expect(byStart.map((r) => r.id)).toEqual([...waitedStarts].sort((a, b) => a.id - b.id).map((r) => r.id));
    }
  }
}

describe("admission per sender, as a model", () => {
  it("holds each sender to its rate, in order, refusing only past its queue, and starts every waiting request in time", () => {
    fc.assert(
      fc.property(fc.array(ops, { minLength: 1, maxLength: 60 }), (sequence) => {
        const world = new World();
        for (const step of sequence) {
          if (step.op === "arrive") for (let i = 0; i < step.count; i += 1) world.arrive(step.sender);
          else if (step.op === "leave") {
            const waiting = world.reqs.filter((r) => r.state === "waiting" && !r.gone);
            if (waiting.length > 0) waiting[step.pick % waiting.length]!.gone = true;
          } else if (step.op === "advance") world.advance(step.ms);
          else {
            world.rate = step.rate;
            world.rateChangedSeq = ++world.seq;
          }
          world.check();
        }
        // Liveness: ten seconds on, nobody still there waits.
        world.advance(10_000);
        world.check();
        expect(world.reqs.filter((r) => r.state === "waiting" && !r.gone)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});
