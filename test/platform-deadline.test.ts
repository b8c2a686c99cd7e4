// Deadline support in the platform layer (security review item 6, the platform half): the lean
// client and withRetry, called directly over HTTP against the simulator's faults. A per-attempt
// timeout of 10 s with three attempts would take 30 s; with a deadline the call fails like a
// timeout once the deadline passes. Bounds are generous: only "well under the 10 s timeout".
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { RequestError } from "@octokit/request-error";
import { createPlatformClient } from "../server/github/platform-client.js";
import { createPlatformRequest, MIN_ATTEMPT_MS, statusOf, withRetry, type RetryPolicy } from "../server/github/platform-request.js";
import { loopbackOnlyUpstreamFetch } from "./support/broker.js";
import { tokenFixture, type TokenFixture } from "./support/fixtures.js";

const PER_ATTEMPT_MS = 10_000;
const WELL_UNDER_ONE_ATTEMPT_MS = 6_000;
const LOOKUP = "/repos/octo-org/app/installation";

let fx: TokenFixture;
beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await fx.sim.close();
});
beforeEach(() => {
  fx.sim.faults.clear();
  fx.sim.clearRequests();
});

const lookups = () => fx.sim.requests.filter((r) => r.method === "GET" && r.path === LOOKUP).length;
const client = () => createPlatformClient({ apiBase: fx.sim.apiBase, fetch: loopbackOnlyUpstreamFetch, timeoutMs: PER_ATTEMPT_MS });
const lookup = (deadlineAt?: number) => client()({ method: "GET", path: LOOKUP, bearer: "not-a-real-jwt", deadlineAt });

/** A policy whose waits are recorded, not slept (the deadline decides whether one starts). */
function recordingPolicy(overrides: Partial<RetryPolicy> = {}): { policy: RetryPolicy; waits: number[] } {
  const waits: number[] = [];
  return { waits, policy: { attempts: 3, baseDelayMs: 10, maxWaitMs: 120_000, sleep: async (ms) => void waits.push(ms), ...overrides } };
}

async function failure(promise: Promise<unknown>): Promise<{ error: unknown; elapsedMs: number }> {
  const started = Date.now();
  try {
    await promise;
  } catch (error) {
    return { error, elapsedMs: Date.now() - started };
  }
  throw new Error("expected the call to fail");
}

function expectTimeoutShaped(error: unknown): void {
  expect(error).toBeInstanceOf(RequestError);
  expect((error as RequestError).response).toBeUndefined();
  expect(statusOf(error)).toBeUndefined();
}

describe("the lean client (PlatformCall.deadlineAt)", () => {
  it("a hanging lookup fails like a timeout at the deadline, not after the per-attempt timeout", async () => {
    // One answered lookup first (a 401 for the fake JWT): the file's first connection is not set up
    // inside the 300 ms, which a loaded machine could spend before the request reaches the simulator.
    await lookup().catch(() => undefined);
    fx.sim.clearRequests();
    fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: "hang" });
    const { error, elapsedMs } = await failure(lookup(Date.now() + 300));
    expectTimeoutShaped(error);
    expect(elapsedMs).toBeLessThan(WELL_UNDER_ONE_ATTEMPT_MS);
    expect(lookups()).toBe(1);
  });

  it("sends nothing when the deadline has passed", async () => {
    const { error } = await failure(lookup(Date.now() - 1));
    expectTimeoutShaped(error);
    expect(lookups()).toBe(0);
  });

  it("without a deadline, answers as before", async () => {
    fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: { status: 404, body: { message: "Not Found" } } });
    const { error } = await failure(lookup());
    expect(statusOf(error)).toBe(404);
  });
});

describe("withRetry with a deadline", () => {
  it("three hanging attempts of 10 s each: one attempt, cut at the deadline, failing like a timeout", async () => {
    fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: "hang" });
    const { policy, waits } = recordingPolicy();
    const deadlineAt = Date.now() + 400;
    const { error, elapsedMs } = await failure(withRetry(policy, "installation lookup", (attempt) => client()({ method: "GET", path: LOOKUP, bearer: "x", deadlineAt: attempt.deadlineAt }), { deadlineAt }));
    expectTimeoutShaped(error);
    expect(elapsedMs).toBeLessThan(WELL_UNDER_ONE_ATTEMPT_MS);
    expect(lookups()).toBe(1);
    expect(waits).toEqual([]);
  });

  it("abandons an attempt at the deadline even if the call ignores the deadline (and aborts it through the signal)", async () => {
    fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: "hang" });
    const { policy } = recordingPolicy({ attempts: 1 });
    let signal: AbortSignal | undefined;
    const { error, elapsedMs } = await failure(
      withRetry(policy, "installation lookup", (attempt) => {
        signal = attempt.signal;
        return client()({ method: "GET", path: LOOKUP, bearer: "x" });
      }, { deadlineAt: Date.now() + 300 }),
    );
    expectTimeoutShaped(error);
    expect(elapsedMs).toBeLessThan(WELL_UNDER_ONE_ATTEMPT_MS);
    expect(signal?.aborted).toBe(true);
  });

  it("cuts an Octokit request (the crawl, listings, GraphQL) at the deadline through the attempt's signal", async () => {
    fx.sim.faults.add({ method: "GET", path: "/repos/octo-org/app/pulls", respond: "hang" });
    const request = createPlatformRequest({ apiBase: fx.sim.apiBase, fetch: loopbackOnlyUpstreamFetch, timeoutMs: PER_ATTEMPT_MS });
    const { policy } = recordingPolicy();
    const { error, elapsedMs } = await failure(
      withRetry(policy, "pull request listing", ({ signal }) => request("GET /repos/{owner}/{repo}/pulls", { owner: "octo-org", repo: "app", request: { signal } }), { deadlineAt: Date.now() + 400 }),
    );
    expectTimeoutShaped(error);
    expect(elapsedMs).toBeLessThan(WELL_UNDER_ONE_ATTEMPT_MS);
    expect(fx.sim.requests.filter((r) => r.path === "/repos/octo-org/app/pulls")).toHaveLength(1);
  });

  it("starts no backoff that cannot finish before the deadline: the 503 is the answer", async () => {
    fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: { status: 503, body: { message: "Service Unavailable" } } });
    const { policy, waits } = recordingPolicy({ baseDelayMs: 5_000 });
    const { error } = await failure(withRetry(policy, "installation lookup", (a) => client()({ method: "GET", path: LOOKUP, bearer: "x", deadlineAt: a.deadlineAt }), { deadlineAt: Date.now() + 2_000 }));
    expect(statusOf(error)).toBe(503);
    expect(waits).toEqual([]);
    expect(lookups()).toBe(1);
  });

  it("starts no rate-limit wait that cannot finish before the deadline", async () => {
    fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: { status: 403, headers: { "retry-after": "30" }, body: { message: "You have exceeded a secondary rate limit." } } });
    const { policy, waits } = recordingPolicy();
    const { error } = await failure(withRetry(policy, "installation lookup", (a) => client()({ method: "GET", path: LOOKUP, bearer: "x", deadlineAt: a.deadlineAt }), { deadlineAt: Date.now() + 5_000 }));
    expect(statusOf(error)).toBe(403);
    expect(waits).toEqual([]);
    expect(lookups()).toBe(1);
  });

  it("retries while there is time: a short backoff fits, the attempts are all made", async () => {
    fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: { status: 503, body: { message: "Service Unavailable" } } });
    const { policy, waits } = recordingPolicy({ baseDelayMs: 10 });
    const { error } = await failure(withRetry(policy, "installation lookup", (a) => client()({ method: "GET", path: LOOKUP, bearer: "x", deadlineAt: a.deadlineAt }), { deadlineAt: Date.now() + 60_000 }));
    expect(statusOf(error)).toBe(503);
    expect(waits).toEqual([10, 20]);
    expect(lookups()).toBe(3);
  });

  it("with an injected clock: no attempt starts with less than MIN_ATTEMPT_MS left", async () => {
    const { policy } = recordingPolicy();
    let runs = 0;
    const deadlineAt = 1_000_000;
    const { error } = await failure(withRetry(policy, "mint", async () => void (runs += 1), { deadlineAt, now: () => deadlineAt - MIN_ATTEMPT_MS + 1 }));
    expectTimeoutShaped(error);
    expect(runs).toBe(0);
    expect(lookups()).toBe(0);
  });

  it("with an injected clock: a wait is judged against the deadline (time for the wait and an attempt)", async () => {
    fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: { status: 502, body: { message: "Bad Gateway" } } });
    let clock = 1_000_000;
    const waits: number[] = [];
    const policy: RetryPolicy = { attempts: 5, baseDelayMs: 100, maxWaitMs: 10_000, sleep: async (ms) => void (waits.push(ms), (clock += ms)) };
    // Backoffs 100, 200, 400: after waiting 100 + 200, a 400 ms wait would leave less than MIN_ATTEMPT_MS of the 700.
    const { error } = await failure(withRetry(policy, "installation lookup", () => client()({ method: "GET", path: LOOKUP, bearer: "x" }), { deadlineAt: clock + 700, now: () => clock }));
    expect(statusOf(error)).toBe(502);
    expect(waits).toEqual([100, 200]);
    expect(lookups()).toBe(3);
  });
});
