// The admin listener of the built broker (`build/server/main.js` as a child process): /healthz,
// /readyz (503 while draining on SIGTERM), /metrics checked by promtool; off unless ADMIN_PORT is set.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/post-json.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { labelValues, promtoolCheck, sample } from "./support/metrics-text.js";
import { freePort } from "./support/redis-server.js";
import { spawnBrokerToExit, spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

let fx: TokenFixture;
let broker: BrokerProcess;
let admin: string;

beforeAll(async () => {
  fx = await tokenFixture();
  const port = await freePort();
  broker = await spawnBroker({ ...fx.env, ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1" });
  admin = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  if (broker) await broker.stop();
  await fx.sim.close();
});

describe("admin listener", () => {
  it("answers /healthz and /readyz 200 once the broker listens", async () => {
    const health = await fetch(`${admin}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${admin}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
    expect(broker.lines.some((line) => line.includes('"tokensmith admin listening"'))).toBe(true);
  });

  it("serves nothing else: another path 404, another method 405", async () => {
    expect((await fetch(`${admin}/token`, { method: "POST", body: "{}" })).status).toBe(404);
    expect((await fetch(`${admin}/`)).status).toBe(404);
    const post = await fetch(`${admin}/metrics`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("adds no path to the broker's origin (spec: four routes, every other path 404)", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const response = await fetch(`${broker.url}${path}`);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: "not_found" });
    }
  });

  it("/metrics: Prometheus text that promtool accepts, the broker's series and the process defaults", async () => {
    const oidcToken = await fx.sim.oidc.sign();
    const answer = await postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
    expect(answer.status).toBe(200);
    const other = (text: string) => sample(text, "tokensmith_requests_total", { route: "other", status: "404", code: "not_found" }) ?? 0;
    const before = other(await (await fetch(`${admin}/metrics`)).text());
    await fetch(`${broker.url}/octo-org/app/secret-path`);

    const response = await fetch(`${admin}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    const check = await promtoolCheck(text);
    expect(check.output).toBe("");
    expect(check.code).toBe(0);

    for (const name of [
      "tokensmith_requests_total", "tokensmith_request_duration_seconds", "tokensmith_upstream_requests_total",
      "tokensmith_upstream_request_duration_seconds", "tokensmith_tokens_minted_total", "tokensmith_oidc_key_fetches_total",
      "tokensmith_key_snapshot_used_total", "tokensmith_webhook_queue_depth", "tokensmith_webhook_deliveries_total",
      "tokensmith_rate_limit_remaining", "process_cpu_seconds_total", "process_resident_memory_bytes", "nodejs_eventloop_lag_seconds", "nodejs_active_handles",
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(sample(text, "tokensmith_requests_total", { route: "/token", status: "200", code: "" })).toBe(1);
    expect(other(text)).toBe(before + 1);
    expect(sample(text, "tokensmith_tokens_minted_total", { platform: "main" })).toBe(1);
    expect(sample(text, "tokensmith_upstream_requests_total", { call: "mint", status: "201" })).toBe(1);
    // No label names a repository, an owner, a path or a token.
    for (const value of labelValues(text)) expect(value).not.toMatch(/octo-org|secret-path|ghs_|eyJ/);
    expectNoSecrets([text], [oidcToken, answer.body.token as string, fx.app.privateKeyPem]);
  });

  it("/readyz answers 503 from SIGTERM on while a request in flight drains; /healthz still 200", async () => {
    const oidcToken = await fx.sim.oidc.sign();
    // Hold the platform's answers so the exchange is in flight when SIGTERM arrives.
    const seen = fx.sim.requests.length;
    fx.sim.latencyMs = 1500;
    const inFlight = postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
    while (!fx.sim.requests.slice(seen).some((r) => r.method === "POST" && r.path.endsWith("/access_tokens"))) await new Promise((r) => setTimeout(r, 10));
    const exited = broker.stop("SIGTERM");
    let ready: Response;
    do ready = await fetch(`${admin}/readyz`);
    while (ready.status === 200);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: "draining" });
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    expect((await inFlight).status).toBe(200);
    expect(await exited).toBe(0);
    fx.sim.latencyMs = 0;
  });
});

describe("admin settings", () => {
  it("is off unless ADMIN_PORT is set", async () => {
    const plain = await spawnBroker({ ...fx.env });
    try {
      expect(plain.lines.some((line) => line.includes("admin"))).toBe(false);
    } finally {
      await plain.stop();
    }
  });

  it("an ADMIN_PORT that is not a port: one fatal line naming it, the broker does not start (exit 1)", async () => {
    const { code, lines } = await spawnBrokerToExit({ ...fx.env, ADMIN_PORT: "eighty" });
    expect(code).toBe(1);
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ level: "fatal", setting: "ADMIN_PORT", msg: "ADMIN_PORT is not a port number (0-65535): the broker does not start" }),
    ]);
  });
});
