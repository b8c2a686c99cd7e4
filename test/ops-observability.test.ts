// What an operator reads off a running broker (issue 40, item 6), on the built broker as a child
// process: tokensmith_build_info, the caller's safe X-Request-Id carried through the answer and the
// log lines, token_denied audit lines for /token's refusals after OIDC verification, and the
// installation and policy caches' hit/miss counters, the rate limit left per installation, policy
// reads as their own call kind, log lines with ISO 8601 times and level names, and the shipped
// Grafana dashboard and Prometheus rules naming only metrics this broker serves. The new series
// pass the /metrics check.
import { readFileSync } from "node:fs";
import { parser as promql } from "@prometheus-io/lezer-promql";
import { parse as parseYaml } from "yaml";
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
  fx.sim.rateLimitHeaders = true; // GitHub's x-ratelimit-* on every installation-token answer
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

  it("log lines carry an ISO 8601 time and the level by name", async () => {
    const entries = broker.lines.map((line) => JSON.parse(line) as { time?: unknown; level?: unknown; msg?: unknown });
    expect(entries.length).toBeGreaterThan(0);
    for (const entry of entries) {
      expect(entry.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(new Date(entry.time as string).toISOString()).toBe(entry.time);
      expect(["trace", "debug", "info", "warn", "error", "fatal"]).toContain(entry.level);
    }
    expect(entries.find((e) => e.msg === "tokensmith broker listening")).toMatchObject({ level: "info" });
  });

  it("policy reads are their own upstream call kind; the rate limit left is a gauge per installation", async () => {
    expect((await token({ owner: "octo-org", repo: "app", oidcToken: await signed() })).status).toBe(200);
    const text = await metrics();
    const policyReads = fx.sim.requests.filter((r) => r.method === "GET" && /\/repos\/[^/]+\/[^/]+\/contents(\/|$)/.test(r.path)).length;
    expect(policyReads).toBeGreaterThan(0);
    const counted = text.split("\n").filter((l) => l.startsWith('tokensmith_upstream_requests_total{call="policy_read"')).reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
    expect(counted).toBe(policyReads);
    expect(text).not.toMatch(/tokensmith_upstream_requests_total\{call="other"/);
    // The latest answer to one of the installation's calls said what is left of its hour.
    const left = sample(text, "tokensmith_installation_rate_limit_remaining", { platform: "main", installation: String(fx.installationId) });
    expect(left).toBe(5000 - fx.sim.primaryRateLimitUsed(fx.installationId));
    expect(left).toBeLessThan(5000);
    expect(parserCheck(text)).toEqual({ code: 0, output: "" });
  });

  it("the Grafana dashboard and the Prometheus alert rules parse and name only metrics this broker serves", async () => {
    const text = await metrics();
    const served = new Set(text.split("\n").flatMap((line) => /^# TYPE (\S+) (\S+)$/.exec(line) ?? []).filter((_, i) => i % 3 === 1));
    for (const line of text.split("\n")) {
      const typed = /^# TYPE (\S+) histogram$/.exec(line);
      if (typed) for (const suffix of ["_bucket", "_sum", "_count"]) served.add(`${typed[1]}${suffix}`);
    }
    /** Every metric an expression selects; fails on a syntax error. */
    const metricsOf = (expr: string): string[] => {
      const tree = promql.parse(expr);
      const names: string[] = [];
      const cursor = tree.cursor();
      do {
        if (cursor.type.isError) throw new Error(`PromQL does not parse at ${cursor.from}: ${expr}`);
        if (cursor.name === "VectorSelector") {
          const node = cursor.node.getChild("Identifier");
          if (node) names.push(expr.slice(node.from, node.to));
        }
      } while (cursor.next());
      return names;
    };
    // Metrics Prometheus makes itself, not the broker.
    const fromPrometheus = new Set(["up"]);

    const rules = parseYaml(readFileSync(new URL("../deploy/prometheus/alerts.yaml", import.meta.url), "utf8")) as { groups: Array<{ name: string; rules: Array<{ alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> }> }> };
    const alerts = rules.groups.flatMap((group) => group.rules);
    expect(alerts.length).toBeGreaterThanOrEqual(5);
    const named = new Set<string>();
    for (const rule of alerts) {
      expect(rule.alert).toMatch(/^Tokensmith[A-Za-z]+$/);
      expect(["page", "ticket"]).toContain(rule.labels.severity);
      expect(rule.annotations.summary).toBeTruthy();
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
      for (const name of metricsOf(rule.expr)) named.add(name);
    }
    const dashboard = JSON.parse(readFileSync(new URL("../deploy/grafana/tokensmith.json", import.meta.url), "utf8")) as { uid: string; panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
    expect(dashboard.uid).toBe("tokensmith");
    expect(dashboard.panels[0]!.title).toBe("Tokens minted / s");
    for (const panel of dashboard.panels) {
      expect(panel.targets.length).toBeGreaterThan(0);
      for (const target of panel.targets) for (const name of metricsOf(target.expr)) named.add(name);
    }
    expect(named.size).toBeGreaterThan(10);
    const missing = [...named].filter((name) => !served.has(name) && !fromPrometheus.has(name));
    expect(missing).toEqual([]);
    // And what an operator must see on the first page is there.
    for (const name of ["tokensmith_tokens_minted_total", "tokensmith_requests_total", "tokensmith_installation_rate_limit_remaining", "tokensmith_store_reachable"]) expect(named).toContain(name);
  });
});
