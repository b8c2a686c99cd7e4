// The /releases stale-while-revalidate rules (server/releases/stale-answer.ts) against a model,
// with fast-check: random sequences of clock moves, the platform's budget spent (a rate limit it
// announced, or the broker's points full) and reset, requests, and refreshes that succeed, fail, or
// fail on a rate limit, in any interleaving. Invariants: no answer older than the stale window; no
// 503 while an entry within it exists; never more than one refresh in flight; none started while
// the platform said to wait; a fresh entry answered at once and never marked stale; a failed
// refresh never replaces the entry; and a stale answer or a refusal never waits for a refresh when
// the budget is spent.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { BrokerError } from "../shared/broker-error.js";
import { createLogger } from "../server/log.js";
import { createStaleAnswerer, type StaleAnswer, type StaleSource } from "../server/releases/stale-answer.js";

const TTL_MS = 60_000;
const STALE_MS = 600_000;
const DEADLINE_MS = 25_000;
const log = createLogger({ level: "silent" });

type Op =
  | { kind: "tick"; ms: number }
  | { kind: "request" }
  | { kind: "finish"; outcome: "ok" | "fail" | "limited" }
  | { kind: "grace" }
  | { kind: "pause"; seconds: number }
  | { kind: "points"; seconds: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 400_000 }) }) },
  { weight: 4, arbitrary: fc.constant<Op>({ kind: "request" }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("finish" as const), outcome: fc.constantFrom("ok" as const, "fail" as const, "limited" as const) }) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: "grace" }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("pause" as const), seconds: fc.integer({ min: 1, max: 900 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("points" as const), seconds: fc.integer({ min: 1, max: 60 }) }) },
);

/** Lets every promise chain that can move, move (the answerer awaits a few in a row). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}

class LimitedError extends Error {}

interface Pending {
  startedAt: number;
  /** What the store held when the request arrived. */
  entry: { generatedAt: number } | null;
  result?: { answer?: StaleAnswer<{ generatedAt: number }>; error?: unknown };
}

describe("stale-while-revalidate (model)", () => {
  it("requests, refreshes, budget and clock in any order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 50 }), async (ops) => {
        let clock = 1_000_000;
        let stored: { generatedAt: number } | null = null;
        let pausedUntil = 0;
        let pointsFreeAt = 0;
        let inFlight = 0;
        let refreshesStarted = 0;
        const crawls: Array<{ resolve: (value: { value: { generatedAt: number }; cached: boolean }) => void; reject: (error: unknown) => void }> = [];
        const graces: Array<() => void> = [];
        const answerer = createStaleAnswerer({
          now: () => clock,
          graceMs: 3_000,
          log,
          wait: (_ms, signal) =>
            new Promise<void>((resolve) => {
              graces.push(resolve);
              signal.addEventListener("abort", () => resolve(), { once: true });
            }),
        });
        const within = (entry: { generatedAt: number } | null) => entry !== null && clock < entry.generatedAt + TTL_MS + STALE_MS;
        const source: StaleSource<{ generatedAt: number }> = {
          readLast: async () =>
            within(stored) ? { value: stored!, fresh: clock < stored!.generatedAt + TTL_MS, ageMs: clock - stored!.generatedAt } : undefined,
          refresh: () => {
            expect(clock).toBeGreaterThanOrEqual(pausedUntil); // never started while the platform said to wait
            inFlight += 1;
            refreshesStarted += 1;
            expect(inFlight).toBe(1);
            return new Promise((resolve, reject) => crawls.push({ resolve, reject })).finally(() => (inFlight -= 1)) as Promise<{ value: { generatedAt: number }; cached: boolean }>;
          },
          budget: async (byAt) => {
            if (clock < pausedUntil) return { paused: true, retryAfterSeconds: Math.ceil((pausedUntil - clock) / 1000) };
            if (pointsFreeAt > byAt) return { paused: false, retryAfterSeconds: Math.ceil((pointsFreeAt - clock) / 1000) };
            return undefined;
          },
          rateLimitSeconds: (error) => (error instanceof LimitedError ? 60 : undefined),
        };
        const pending: Pending[] = [];

        for (const step of ops) {
          if (step.kind === "tick") clock += step.ms;
          else if (step.kind === "pause") pausedUntil = Math.max(pausedUntil, clock + step.seconds * 1000);
          else if (step.kind === "points") pointsFreeAt = Math.max(pointsFreeAt, clock + step.seconds * 1000);
          else if (step.kind === "grace") graces.splice(0).forEach((fire) => fire());
          else if (step.kind === "finish") {
            const crawl = crawls.shift();
            if (!crawl) continue;
            if (step.outcome === "ok") {
              stored = { generatedAt: clock }; // the caller's refresh stores before it resolves
              crawl.resolve({ value: stored, cached: false });
            } else crawl.reject(step.outcome === "limited" ? new LimitedError("rate limited") : new Error("outage"));
          } else {
            const startedBefore = refreshesStarted;
            const entry = within(stored) ? stored : null;
            const request: Pending = { startedAt: clock, entry };
            pending.push(request);
            void answerer.answer("k", source, clock + DEADLINE_MS).then(
              (answer) => (request.result = { answer }),
              (error: unknown) => (request.result = { error }),
            );
            await settle();
            const fresh = entry !== null && clock < entry.generatedAt + TTL_MS;
            const pausedNow = clock < pausedUntil;
            const spentNow = pausedNow || pointsFreeAt > clock;
            if (fresh) {
              // At once, from the store, never stale, no refresh.
              expect(request.result?.answer).toEqual({ value: entry, cached: true });
              expect(refreshesStarted).toBe(startedBefore);
            } else if (entry !== null && spentNow) {
              // At once, stale, whatever refresh is (or is not) running.
              expect(request.result?.answer).toEqual({ value: entry, cached: true, staleAgeMs: clock - entry.generatedAt });
              if (pausedNow) expect(refreshesStarted).toBe(startedBefore);
            } else if (entry === null && (pausedNow || pointsFreeAt > clock + DEADLINE_MS)) {
              // At once: 503 with the budget's wait.
              const error = request.result?.error;
              expect(error).toBeInstanceOf(BrokerError);
              expect((error as BrokerError).code).toBe("platform_rate_limited");
              expect((error as BrokerError).retryAfter).toBeGreaterThanOrEqual(1);
            } else {
              // A refresh runs for it (this request's or one it joined).
              expect(inFlight).toBe(1);
            }
          }
          await settle();
          expect(inFlight).toBeLessThanOrEqual(1);
          for (const request of pending.filter((p) => p.result)) {
            const { answer, error } = request.result!;
            if (answer) {
              // Never older than the stale window (as of its request); stale only past the TTL.
              expect(request.startedAt - answer.value.generatedAt).toBeLessThan(TTL_MS + STALE_MS);
              if (answer.staleAgeMs !== undefined) {
                expect(request.entry).not.toBeNull();
                expect(answer.value).toBe(request.entry);
                expect(answer.staleAgeMs).toBeGreaterThanOrEqual(TTL_MS);
              }
            } else {
              // No error while an entry within the window existed.
              expect(request.entry).toBeNull();
              if (error instanceof BrokerError) expect(error.code).toBe("platform_rate_limited");
              else expect((error as Error).message).toBe("outage");
            }
          }
          pending.splice(0, pending.length, ...pending.filter((p) => !p.result));
        }
        // Everything ends: the refreshes (background ones too) fail, the graces fire; every request is answered.
        for (let round = 0; round < 5 && (round === 0 || pending.some((p) => !p.result)); round += 1) {
          crawls.splice(0).forEach((crawl) => crawl.reject(new Error("outage")));
          graces.splice(0).forEach((fire) => fire());
          await settle();
        }
        expect(pending.every((p) => p.result)).toBe(true);
        expect(inFlight).toBe(0);
      }),
      { numRuns: 300 },
    );
  });
});
