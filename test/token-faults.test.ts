// Platform faults on the /token path: every one ends in the API's code, retried only where
// docs/design.md#decisions-where-the-contract-was-open allows (GETs and the idempotent mint, on network errors, 5xx and rate limits).
import { describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { installationSubject } from "../server/installation/repository-scope.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const secrets: string[] = [];

// The upstream timeout is short so that hangs end quickly, but not so short that a loaded CI machine
// turns a plain answer into a timeout (400 ms did once: the 503 arrived late and was logged as a network failure).
const t = brokerPerTest({ secrets, broker: { timing: { upstreamTimeoutMs: 1_000 }, retry: { attempts: 3, baseDelayMs: 10, maxWaitMs: 1500 } } });

async function exchange() {
  const oidcToken = await t.fx.sim.oidc.sign();
  secrets.push(oidcToken);
  const res = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

const LOOKUP = /\/repos\/octo-org\/app\/installation$/;
const MINT = /\/access_tokens$/;
const count = (path: RegExp) => t.fx.sim.requests.filter((r) => path.test(r.path)).length;
const inSeconds = (s: number) => String(Math.floor(Date.now() / 1000) + s);

describe.each([
  ["installation lookup", LOOKUP, "GET", 500, "github_installation_lookup_failed"],
  ["mint", MINT, "POST", 502, "installation_token_failed"],
] as Array<[string, RegExp, string, number, string]>)("faults on the %s", (_name, path, method, status, code) => {
  it.each([500, 502, 503])("a persistent %i ends in the route's code after 3 attempts", async (upstream) => {
    t.fx.sim.faults.add({ method, path, respond: { status: upstream, body: { message: "Server Error" } } });
    const res = await exchange();
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: code });
    expect(count(path)).toBe(3);
  });

  it("a transient 503 is retried, the retry logged, and the exchange succeeds", async () => {
    t.fx.sim.faults.add({ method, path, times: 1, respond: { status: 503, body: { message: "Service Unavailable" } } });
    const res = await exchange();
    expect(res.status).toBe(200);
    expect(count(path)).toBe(2);
    const retried = t.broker.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === "platform call retried");
    expect(retried).toEqual([expect.objectContaining({ call: path === MINT ? "mint" : "installation lookup", attempt: 1, status: 503 })]);
  });

  it("a hang past the upstream timeout is abandoned and retried", async () => {
    t.fx.sim.faults.add({ method, path, respond: "hang" });
    const res = await exchange();
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: code });
    expect(count(path)).toBe(3);
  });

  it("one hang, then an answer: the retry succeeds", async () => {
    t.fx.sim.faults.add({ method, path, times: 1, respond: "hang" });
    expect((await exchange()).status).toBe(200);
  });

  it("malformed JSON ends in the route's code", async () => {
    t.fx.sim.faults.add({ method, path, respond: "garbage" });
    const res = await exchange();
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: code });
  });

  it("a secondary rate limit is retried after retry-after", async () => {
    t.fx.sim.faults.add({
      method, path, times: 1,
      respond: { status: 403, headers: { "retry-after": "1" }, body: { message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." } },
    });
    const res = await exchange();
    expect(res.status).toBe(200);
    expect(count(path)).toBe(2);
  });

  it("a primary rate limit resetting soon is waited for", async () => {
    t.fx.sim.faults.add({
      method, path, times: 1,
      respond: { status: 403, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": inSeconds(1) }, body: { message: "API rate limit exceeded for installation ID 1." } },
    });
    expect((await exchange()).status).toBe(200);
    expect(count(path)).toBe(2);
  });

  it("a primary rate limit resetting later than the broker will wait fails at once", async () => {
    t.fx.sim.faults.add({
      method, path,
      respond: { status: 429, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": inSeconds(3600) }, body: { message: "API rate limit exceeded" } },
    });
    const res = await exchange();
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: code });
    expect(count(path)).toBe(1);
  });

  it("after a rate limit resetting later, that call is not sent again until the reset: the next exchanges fail fast with Retry-After", async () => {
    t.fx.sim.faults.add({
      method, path, times: 1,
      respond: { status: 403, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": inSeconds(600) }, body: { message: "API rate limit exceeded for installation ID 1." } },
    });
    expect((await exchange()).status).toBe(status);
    expect(count(path)).toBe(1);
    for (let i = 0; i < 3; i += 1) {
      const res = await exchange();
      expect(res.status).toBe(status);
      expect(res.body).toEqual({ error: code });
      const wait = Number(res.headers.get("retry-after"));
      expect(wait).toBeGreaterThan(500); // the time left until the reset, not the 5 s of an outage
      expect(wait).toBeLessThanOrEqual(601);
    }
    expect(count(path)).toBe(1);
  });

  it("a secondary limit in GitHub's words without retry-after pauses that call for a minute", async () => {
    t.fx.sim.faults.add({
      method, path, times: 1,
      respond: { status: 403, body: { message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", documentation_url: "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits" } },
    });
    const first = await exchange();
    expect(first.status).toBe(status);
    expect(first.headers.get("retry-after")).toBe("60");
    const res = await exchange();
    expect(res.status).toBe(status);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(50);
    expect(count(path)).toBe(1);
  });

  it("a plain 403 is not retried", async () => {
    t.fx.sim.faults.add({ method, path, respond: { status: 403, body: { message: "Resource not accessible by integration" } } });
    const res = await exchange();
    expect(res.status).toBe(status);
    expect(count(path)).toBe(1);
  });
});

describe("the mint's 4xx", () => {
  it("a 422 on a cached installation is not retried as such: asked again once from a fresh lookup", async () => {
    expect((await exchange()).status).toBe(200);
    t.fx.sim.clearRequests();
    t.fx.sim.faults.add({ method: "POST", path: MINT, times: 1, respond: { status: 422, body: { message: "The permissions requested are not granted to this installation." } } });
    expect((await exchange()).status).toBe(200);
    expect(count(MINT)).toBe(2);
    expect(count(LOOKUP)).toBe(1);
  });

  it("a persistent 422 (a mint by repository id: not accessible) is 404 app_not_installed and drops the cached installation", async () => {
    expect((await exchange()).status).toBe(200);
    t.fx.sim.clearRequests();
    const fault = t.fx.sim.faults.add({ method: "POST", path: MINT, respond: { status: 422, body: { message: "There is at least one repository that does not exist or is not accessible to the parent installation." } } });
    const res = await exchange();
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
    expect(res.headers.get("retry-after")).toBeNull();
    expect(count(MINT)).toBe(2);
    expect(count(LOOKUP)).toBe(1);
    fault.remove();
    t.fx.sim.clearRequests();
    expect((await exchange()).status).toBe(200);
    expect(count(LOOKUP)).toBe(1);
  });

  it("a 401 on the installation lookup (App JWT refused) signs a fresh App JWT next time", async () => {
    expect((await exchange()).status).toBe(200);
    const repository = t.fx.sim.repository("octo-org", "app");
    const ids = { repositoryId: repository.id, ownerId: repository.ownerId };
    t.broker.app.broker.installations.drop(t.broker.app.broker.installations.key(t.fx.sim.apiBase, String(t.fx.app.id), installationSubject({ owner: "octo-org", repo: "app", ids })));
    const signed = t.broker.app.broker.appJwt.signedCount;
    t.fx.sim.faults.add({ method: "GET", path: LOOKUP, times: 1, respond: { status: 401, body: { message: "A JSON web token could not be decoded" } } });
    expect((await exchange()).status).toBe(500);
    expect((await exchange()).status).toBe(200);
    expect(t.broker.app.broker.appJwt.signedCount).toBe(signed + 1);
  });

  it("a 401 (App JWT refused) signs a fresh App JWT next time", async () => {
    expect((await exchange()).status).toBe(200);
    const signed = t.broker.app.broker.appJwt.signedCount;
    t.fx.sim.faults.add({ method: "POST", path: MINT, times: 1, respond: { status: 401, body: { message: "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued" } } });
    expect((await exchange()).status).toBe(502);
    expect((await exchange()).status).toBe(200);
    expect(t.broker.app.broker.appJwt.signedCount).toBe(signed + 1);
  });
});
