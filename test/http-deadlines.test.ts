// The request deadline backstop and the request log line of an abandoned request, over HTTP with
// the platform's installation lookup hanging (a simulator fault).
import { describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const secrets: string[] = [];
const LOOKUP = /\/repos\/octo-org\/app\/installation$/;

// Deadline 1 s; a platform attempt or key-set fetch gives up after 2.5 s, once: the late failure comes after the answer.
// The deadline is short so that hangs end quickly, but long enough for a cold /token (discovery, key
// set, lookup, mint) on a CI machine running the suite's other files (1 s was not, once).
const t = brokerPerTest({ secrets, broker: { timing: { requestDeadlineMs: 2_500, upstreamTimeoutMs: 5_000, jwksTimeoutMs: 5_000 }, retry: { attempts: 1, baseDelayMs: 10, maxWaitMs: 0 } } });

type Entry = { msg?: string; status?: number; code?: string; request_id?: string; route?: string };
const entries = () => t.broker.logs.map((line) => JSON.parse(line) as Entry);
const requestLines = () => entries().filter((e) => e.msg === "request");

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function token() {
  const oidcToken = await t.fx.sim.oidc.sign();
  secrets.push(oidcToken);
  return oidcToken;
}

describe("request deadline", () => {
  it("a request still unanswered at its deadline gets 503 deadline_exceeded with Retry-After; the late work does not answer or crash", async () => {
    // The issuer's key set hangs: platform calls end before the deadline in their route's own code
    // (test/token-limits.test.ts), a key-set fetch keeps its own timeout.
    t.fx.sim.oidc.keyEndpoint = "hang";
    const res = await postJson(`${t.broker.url}/token`, { oidcToken: await token(), owner: "octo-org", repo: "app" });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: "deadline_exceeded" });
    expect(res.headers.get("retry-after")).toBe("5");
    expect(res.headers.get("connection")).toBe("close");
    const requestId = res.headers.get("x-request-id");
    expect(entries().some((e) => e.msg?.startsWith("request deadline passed") && e.request_id === requestId)).toBe(true);

    // The key-set fetch gives up later (its own timeout): that failure is logged, nothing more is sent.
    await until(() => entries().some((e) => e.msg === "work ended after its request was answered or abandoned" && e.request_id === requestId), "the late failure's log line");
    expect(requestLines().filter((e) => e.request_id === requestId)).toEqual([expect.objectContaining({ status: 503, code: "deadline_exceeded" })]);

    // And the broker is still serving.
    t.fx.sim.oidc.keyEndpoint = "ok";
    const next = await postJson(`${t.broker.url}/token`, { oidcToken: await token(), owner: "octo-org", repo: "app" });
    expect(next.status).toBe(200);
    secrets.push(next.body.token as string);
  });

  it("a quick answer is untouched by its deadline: one request line, no deadline line", async () => {
    const res = await postJson(`${t.broker.url}/token`, { oidcToken: await token(), owner: "octo-org", repo: "app" });
    expect(res.status).toBe(200);
    secrets.push(res.body.token as string);
    await new Promise((r) => setTimeout(r, 3_000)); // past the deadline: its timer was cleared
    expect(requestLines()).toEqual([expect.objectContaining({ status: 200 })]);
    expect(entries().some((e) => e.msg?.startsWith("request deadline passed"))).toBe(false);
  });
});

describe("abandoned requests", () => {
  it("a request whose caller went away is logged once, with status 499", async () => {
    t.fx.sim.faults.add({ method: "GET", path: LOOKUP, respond: "hang" });
    const caller = new AbortController();
    const answer = fetch(`${t.broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken: await token(), owner: "octo-org", repo: "app" }), signal: caller.signal });
    await until(() => t.fx.sim.requests.some((r) => LOOKUP.test(r.path)), "the installation lookup");
    caller.abort();
    await expect(answer).rejects.toThrow();

    await until(() => requestLines().length === 1, "the request line");
    expect(requestLines()[0]).toEqual(expect.objectContaining({ route: "/token", status: 499 }));
    // Neither the deadline (2.5 s) nor the late failure (5 s) writes a second line.
    await until(() => entries().some((e) => e.msg === "work ended after its request was answered or abandoned"), "the late failure's log line");
    expect(requestLines()).toHaveLength(1);
    expect(entries().some((e) => e.msg?.startsWith("request deadline passed"))).toBe(false);
  });
});
