// Issue 25, model-based: the action's exchange (action/request-token.ts) against fast-check's
// scripts of broker answers, on a virtual clock. The real exchange runs with an Http that plays the
// script (one answer per POST; "no answer" costs the time it would, cut at the request's timeout)
// and a sleep that moves the clock; a model written from docs/action.md's rules says which POSTs,
// waits and ending to expect. Invariants checked on every run: nothing after a 200 of any shape,
// the step's bound kept, the fallback asked only after the primary gave no answer in that round.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { ActionFailure } from "../action/action-failure.js";
import { HttpTimeout, IncompleteAnswer } from "../action/http.js";
import type { Inputs } from "../action/inputs.js";
import { requestToken } from "../action/request-token.js";
import type { Http, HttpAnswer } from "../action/toolkit.js";
import { oneLine, shown } from "../action/untrusted-text.js";
import { ERROR_CODES, type ErrorCode } from "../shared/error-codes.js";

const PRIMARY = "http://primary.test";
const FALLBACK = "http://fallback.test";
const ATTEMPT_TIMEOUT_MS = 30_000;
const RETRY = { attempts: 4, baseDelayMs: 1000, maxRetryAfterMs: 30_000 };

type Answer =
  | { kind: "ok" }
  | { kind: "bad-200" } // not JSON
  | { kind: "incomplete"; status: 200 | 502 }
  | { kind: "verdict"; code: ErrorCode; status: number; retryAfterS?: number }
  | { kind: "no-answer"; ms: number };

const codes = Object.keys(ERROR_CODES) as ErrorCode[];
const answerArb: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 1, arbitrary: fc.constant<Answer>({ kind: "ok" }) },
  { weight: 1, arbitrary: fc.constant<Answer>({ kind: "bad-200" }) },
  { weight: 1, arbitrary: fc.constantFrom<200 | 502>(200, 502).map((status): Answer => ({ kind: "incomplete", status })) },
  {
    weight: 4,
    arbitrary: fc.record({ code: fc.constantFrom(...codes), retryAfterS: fc.option(fc.integer({ min: 0, max: 120 }), { nil: undefined }) }).map(
      ({ code, retryAfterS }): Answer => ({ kind: "verdict", code, status: ERROR_CODES[code].status, ...(retryAfterS !== undefined ? { retryAfterS } : {}) }),
    ),
  },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 45_000 }).map((ms): Answer => ({ kind: "no-answer", ms })) },
);

interface World {
  clock: number;
  posts: Array<{ url: string; at: number }>;
  sleeps: number[];
}

function scriptedHttp(world: World, script: Answer[]): Http {
  let next = 0;
  return {
    async request(method, url, _body, _headers, limits): Promise<HttpAnswer> {
      const timeout = Math.max(1, Math.min(ATTEMPT_TIMEOUT_MS, limits?.timeoutMs ?? Infinity));
      if (method === "GET") return { status: 200, headers: {}, body: JSON.stringify({ value: "oidc-jwt" }) };
      world.posts.push({ url: url.replace(/\/token$/, ""), at: world.clock });
      const answer = script[next++] ?? { kind: "no-answer", ms: 0 };
      switch (answer.kind) {
        case "ok":
          return { status: 200, headers: {}, body: JSON.stringify({ token: "ghs_exchangeModelToken000000000000000001", expires_at: "2030-01-01T00:00:00Z", repository: "octo-org/app" }) };
        case "bad-200":
          return { status: 200, headers: {}, body: "<html>" };
        case "incomplete":
          throw new IncompleteAnswer(answer.status, new Error("connection closed before the answer was complete"));
        case "verdict":
          return { status: answer.status, headers: answer.retryAfterS !== undefined ? { "retry-after": String(answer.retryAfterS) } : {}, body: JSON.stringify({ error: answer.code }) };
        case "no-answer":
          if (answer.ms >= timeout) {
            world.clock += timeout;
            throw new HttpTimeout(timeout);
          }
          world.clock += answer.ms;
          throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      }
    },
  };
}

/** docs/action.md's rules, on their own: the POSTs (addresses), the waits, and how the exchange ends. */
function model(script: Answer[], boundMs: number, withFallback: boolean): { posts: string[]; sleeps: number[]; end: "token" | "failed" } {
  const addresses = withFallback ? [PRIMARY, FALLBACK] : [PRIMARY];
  const posts: string[] = [];
  const sleeps: number[] = [];
  let clock = 0;
  let next = 0;
  for (let round = 1; round <= RETRY.attempts; round++) {
    let retryAfterMs: number | undefined;
    for (const address of addresses) {
      if (clock >= boundMs) return { posts, sleeps, end: "failed" };
      const answer = script[next++] ?? { kind: "no-answer", ms: 0 };
      posts.push(address);
      if (answer.kind === "ok" || answer.kind === "bad-200") return { posts, sleeps, end: "token" };
      if (answer.kind === "incomplete" && answer.status === 200) return { posts, sleeps, end: "failed" };
      if (answer.kind === "verdict") {
        const retried = ERROR_CODES[answer.code].retryable && (answer.status < 500 || answer.retryAfterS !== undefined || answer.code === "oidc_key_fetch_failed");
        if (!retried) return { posts, sleeps, end: "failed" };
        retryAfterMs = answer.retryAfterS !== undefined ? answer.retryAfterS * 1000 : undefined;
        break;
      }
      if (answer.kind === "no-answer") clock += Math.min(answer.ms, ATTEMPT_TIMEOUT_MS, boundMs - clock);
    }
    if (clock >= boundMs || round === RETRY.attempts) return { posts, sleeps, end: "failed" };
    const backoff = RETRY.baseDelayMs * 2 ** (round - 1);
    const delay = retryAfterMs === undefined ? backoff : Math.max(backoff, Math.min(retryAfterMs, RETRY.maxRetryAfterMs));
    if (delay >= boundMs - clock) return { posts, sleeps, end: "failed" };
    sleeps.push(delay);
    clock += delay;
  }
  return { posts, sleeps, end: "failed" };
}

const inputs = (withFallback: boolean): Inputs => ({
  authMode: "public-app",
  brokerUrl: PRIMARY,
  apiUrl: "https://api.github.com",
  ...(withFallback ? { fallbackUrl: FALLBACK } : {}),
  audience: "tokensmith",
  skipTokenRevoke: false,
  timeoutSeconds: 90,
  owner: "octo-org",
  repo: "app",
  repositories: ["octo-org/app"],
});

describe("the exchange against scripted broker answers (fast-check)", () => {
  it("does what the model says, and never POSTs after a 200, past the bound, or to the fallback after an answer", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(answerArb, { maxLength: 10 }), fc.integer({ min: 1, max: 120 }), fc.boolean(), async (script, boundSeconds, withFallback) => {
        const world: World = { clock: 0, posts: [], sleeps: [] };
        const boundMs = boundSeconds * 1000;
        let end: "token" | "failed";
        try {
          await requestToken(
            {
              core: { setSecret: () => undefined, info: () => undefined, debug: () => undefined },
              env: { ACTIONS_ID_TOKEN_REQUEST_URL: "http://runner.test/_actions/idtoken?api-version=2.0", ACTIONS_ID_TOKEN_REQUEST_TOKEN: "t" },
              http: scriptedHttp(world, script),
              retry: RETRY,
              sleep: async (ms) => {
                world.sleeps.push(ms);
                world.clock += ms;
              },
              deadline: { at: boundMs, seconds: boundSeconds, now: () => world.clock },
            },
            inputs(withFallback),
          );
          end = "token";
        } catch (error) {
          expect(error).toBeInstanceOf(ActionFailure);
          expect((error as Error).message).not.toMatch(/[\r\n]/);
          end = "failed";
        }
        const expected = model(script, boundMs, withFallback);
        expect({ posts: world.posts.map((p) => p.url), sleeps: world.sleeps, end }).toEqual(expected);

        // Invariants, whatever the model says.
        expect(world.clock).toBeLessThanOrEqual(boundMs);
        const first200 = script.findIndex((a, i) => i < world.posts.length && (a.kind === "ok" || a.kind === "bad-200" || (a.kind === "incomplete" && a.status === 200)));
        if (first200 >= 0) expect(world.posts).toHaveLength(first200 + 1);
        world.posts.forEach((post, i) => {
          if (post.url !== FALLBACK) return;
          expect(world.posts[i - 1]?.url).toBe(PRIMARY);
          expect(["no-answer", "incomplete"]).toContain((script[i - 1] ?? { kind: "no-answer" }).kind); // past the script: no answer
        });
        expect(world.posts.length).toBeLessThanOrEqual(RETRY.attempts * (withFallback ? 2 : 1));
      }),
      { numRuns: 400 },
    );
  });
});

describe("untrusted text (fast-check)", () => {
  const hostile = fc.string({ unit: fc.oneof(fc.constantFrom("\n", "\r", "\u0085", "\u2028", "\u202e", "\u0000", ":", "%", '"', "\\"), fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code))), maxLength: 120 });

  it("oneLine: whatever went in, one line that cannot start a workflow command", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const line = oneLine(text);
        expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
        expect(line.startsWith("::")).toBe(false);
      }),
    );
  });

  it("shown: quoted, bounded, no control character, and the escaped text reads back to the original's prefix", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const out = shown(text, 80);
        expect(out).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/);
        expect(out.startsWith('"')).toBe(true);
        const body = out.endsWith('…"') ? out.slice(0, -2) + '"' : out;
        expect(JSON.parse(body)).toBe(text.slice(0, 80));
      }),
    );
  });
});
