// What an operator reads off a running broker (issue 40, item 6), on the built broker as a child
// process: tokensmith_build_info, the caller's safe X-Request-Id carried through the answer and the
// log lines, token_denied audit lines for /token's refusals after OIDC verification, and the
// installation and policy caches' hit/miss counters. The new series pass the /metrics check.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { parserCheck, sample } from "./support/metrics-text.js";
import { freePort } from "./support/redis-server.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const VERSION = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
let fx: TokenFixture;
let broker: BrokerProcess;
let admin: string;
const secrets: string[] = [];
beforeAll(async () => {
  fx = await tokenFixture();
  const port = await freePort();
  // TOKEN_POLICY optional: the policy files are read (none exist here), so their cache is used.
  broker = await spawnBroker({ ...fx.env, TOKEN_POLICY: "optional", ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1" });
  admin = `http://127.0.0.1:${port}`;
}, 60_000);
afterAll(async () => {
  expect(await broker.stop()).toBe(0);
  await fx.sim.close();
  expectNoSecrets(broker.lines, [...secrets, fx.app.privateKeyPem]);
});

async function token(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await fetch(`${broker.url}/token`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const answer = (await response.json()) as Record<string, unknown>;
  if (typeof answer.token === "string") secrets.push(answer.token);
  return { status: response.status, requestId: response.headers.get("x-request-id"), body: answer };
}

async function signed(claims: Record<string, unknown> = {}): Promise<string> {
  const jwt = await fx.sim.oidc.sign(claims);
  secrets.push(jwt);
  return jwt;
}

/** The broker's JSON log lines so far, once `ready` finds one (the log is written asynchronously). */
async function lineWhere(match: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown> | undefined> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const found = broker.lines.map((line) => JSON.parse(line) as Record<string, unknown>).find(match);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}

const metrics = async () => (await fetch(`${admin}/metrics`)).text();

describe("operator's view", () => {
  it("tokensmith_build_info{version, node} is 1, and /metrics still passes the exposition check", async () => {
    const text = await metrics();
    expect(sample(text, "tokensmith_build_info", { version: VERSION, node: process.versions.node })).toBe(1);
    expect(parserCheck(text)).toEqual({ code: 0, output: "" });
  });

  it("a safe X-Request-Id is echoed and logged; an unsafe one is replaced by a fresh id", async () => {
    const given = "lb-7f3a.b_c-42";
    const answer = await token({ owner: "octo-org", repo: "app", oidcToken: await signed() }, { "x-request-id": given });
    expect([answer.status, answer.requestId]).toEqual([200, given]);
    expect(await lineWhere((entry) => entry.msg === "request" && entry.request_id === given)).toMatchObject({ route: "/token", status: 200 });
    expect(await lineWhere((entry) => entry.audit === "token_minted" && entry.request_id === given)).toMatchObject({ repository: "octo-org/app" });

    for (const unsafe of ["has space", "x".repeat(129), "a/b", "quote\"d"]) {
      const refused = await token({}, { "x-request-id": unsafe });
      expect(refused.requestId).not.toBe(unsafe);
      expect(refused.requestId).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("token_denied audit lines for refusals after OIDC verification: repo_mismatch, oidc_token_replayed, app_not_installed (never the JWT)", async () => {
    const mismatch = await token({ owner: "octo-org", repo: "other", oidcToken: await signed(), rule: "deploy" }, { "x-request-id": "deny-mismatch" });
    expect(mismatch.body.error).toBe("repo_mismatch");
    expect(await lineWhere((entry) => entry.audit === "token_denied" && entry.request_id === "deny-mismatch")).toMatchObject({ code: "repo_mismatch", repository: "octo-org/app", rule: "deploy", issuer: fx.env.HOST_OIDC_ISSUER });

    const once = await signed();
    expect((await token({ owner: "octo-org", repo: "app", oidcToken: once })).status).toBe(200);
    const replayed = await token({ owner: "octo-org", repo: "app", oidcToken: once }, { "x-request-id": "deny-replay" });
    expect(replayed.body.error).toBe("oidc_token_replayed");
    expect(await lineWhere((entry) => entry.audit === "token_denied" && entry.request_id === "deny-replay")).toMatchObject({ code: "oidc_token_replayed", repository: "octo-org/app" });

    const notInstalled = await token({ owner: "nobody-org", repo: "app", oidcToken: await signed({ repository: "nobody-org/app", repository_owner: "nobody-org", repository_id: "987654", repository_owner_id: "987655" }) }, { "x-request-id": "deny-install" });
    expect(notInstalled.body.error).toBe("app_not_installed");
    expect(await lineWhere((entry) => entry.audit === "token_denied" && entry.request_id === "deny-install")).toMatchObject({ code: "app_not_installed", repository: "nobody-org/app" });

    // Before verification nothing is audited: a bad token is not a caller.
    expect((await token({ owner: "octo-org", repo: "app", oidcToken: "not-a-jwt" }, { "x-request-id": "deny-unverified" })).body.error).toBe("invalid_oidc_token");
    expect(await lineWhere((entry) => entry.request_id === "deny-unverified" && entry.msg === "request")).toBeDefined();
    expect(broker.lines.some((line) => line.includes("token_denied") && line.includes("deny-unverified"))).toBe(false);
  });

  it("tokensmith_cache_requests_total counts the installation and policy caches' misses and hits", async () => {
    const before = await metrics();
    const count = (text: string, result: string) => sample(text, "tokensmith_cache_requests_total", { cache: "installation", result }) ?? 0;
    expect(sample(before, "tokensmith_cache_requests_total", { cache: "policy", result: "miss" })).toBeDefined();
    for (let i = 0; i < 3; i += 1) expect((await token({ owner: "octo-org", repo: "app", oidcToken: await signed() })).status).toBe(200);
    const after = await metrics();
    // The installation was looked up by the earlier tests: all three are hits, none a miss.
    expect(count(after, "hit") - count(before, "hit")).toBe(3);
    expect(count(after, "miss") - count(before, "miss")).toBe(0);
    expect(count(before, "miss")).toBeGreaterThanOrEqual(1);
    // The policy files (the repository's and the owner's) are read through their cache on every mint:
    // kept from the earlier mints, each of the three finds both fresh.
    const policy = (text: string, result: string) => sample(text, "tokensmith_cache_requests_total", { cache: "policy", result }) ?? 0;
    expect([policy(after, "hit") - policy(before, "hit"), policy(after, "miss") - policy(before, "miss")]).toEqual([6, 0]);
  });
});
