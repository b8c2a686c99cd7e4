// /metrics values move as the broker serves: requests, upstream calls, mints, key fetches, the key
// snapshot, the platform's rate limit, webhook outcomes. A broker in this process (its env mutable
// per test) with the admin listener on loopback; every request over real HTTP to the simulator.
import { createHmac, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startAdmin, type AdminHandle } from "../server/admin/start-admin.js";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { labelValues, sample, scrape } from "./support/metrics-text.js";
import { REDIS_URL } from "./support/redis-url.js";

let fx: TokenFixture;
let broker: TestBroker;
let admin: AdminHandle;
let adminUrl: string;

beforeAll(async () => {
  fx = await tokenFixture();
  broker = await startBroker({ ...fx.env, HOST_WEBHOOK_SECRET: "metrics-webhook-secret-0123456789abcdef" });
  admin = startAdmin({ env: { ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1" }, metrics: broker.app.broker.metrics, log: broker.app.broker.log })!;
  admin.readiness.listening();
  adminUrl = `http://127.0.0.1:${await admin.port}`;
});
afterAll(async () => {
  await admin.close();
  await broker.close();
  await fx.sim.close();
});

const exchange = async () => postJson(`${broker.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });

describe("metrics move as requests are served", () => {
  it("a /token exchange: request count and duration, upstream calls, a minted token, a key fetch", async () => {
    const before = await scrape(adminUrl);
    expect((await exchange()).status).toBe(200);
    const after = await scrape(adminUrl);
    const delta = (name: string, labels: Record<string, string> = {}) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    expect(delta("tokensmith_requests_total", { route: "/token", status: "200", code: "" })).toBe(1);
    expect(delta("tokensmith_request_duration_seconds_count", { route: "/token" })).toBe(1);
    expect(delta("tokensmith_tokens_minted_total", { platform: "main" })).toBe(1);
    expect(delta("tokensmith_upstream_requests_total", { call: "mint", status: "201" })).toBe(1);
    expect(delta("tokensmith_upstream_request_duration_seconds_count", { call: "mint" })).toBe(1);
    expect(sample(after, "tokensmith_oidc_key_fetches_total", { result: "ok" })).toBeGreaterThanOrEqual(1);
    expect(sample(after, "tokensmith_upstream_requests_total", { call: "oidc_discovery", status: "200" })).toBeGreaterThanOrEqual(1);
    expect(sample(after, "tokensmith_upstream_requests_total", { call: "jwks", status: "200" })).toBeGreaterThanOrEqual(1);
  });

  it("an error answer is counted with its code; an unknown path as route other, never the path", async () => {
    const before = await scrape(adminUrl);
    const refused = await postJson(`${broker.url}/token`, { owner: "octo-org", repo: "app" });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("missing_required_fields");
    expect((await fetch(`${broker.url}/repos/octo-org/private-thing`)).status).toBe(404);
    const after = await scrape(adminUrl);
    const count = (text: string, labels: Record<string, string>) => sample(text, "tokensmith_requests_total", labels) ?? 0;
    const bad = { route: "/token", status: "400", code: "missing_required_fields" };
    expect(count(after, bad) - count(before, bad)).toBe(1);
    const other = { route: "other", status: "404", code: "not_found" };
    expect(count(after, other) - count(before, other)).toBe(1);
    for (const value of labelValues(after)) expect(value).not.toMatch(/octo-org|private-thing/);
  });

  it("the issuer unreachable: a failed key fetch and upstream calls with status error", async () => {
    const issuer = broker.env.HOST_OIDC_ISSUER;
    broker.env.HOST_OIDC_ISSUER = "http://127.0.0.1:9/nowhere"; // discard port: nothing answers
    try {
      const oidcToken = await fx.sim.oidc.sign({ iss: broker.env.HOST_OIDC_ISSUER });
      const before = await scrape(adminUrl);
      const answer = await postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
      expect(answer.status).toBe(503);
      expect(answer.body.error).toBe("oidc_key_fetch_failed");
      const after = await scrape(adminUrl);
      const delta = (name: string, labels: Record<string, string>) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
      expect(delta("tokensmith_oidc_key_fetches_total", { result: "failed" })).toBe(1);
      expect(delta("tokensmith_upstream_requests_total", { call: "oidc_discovery", status: "error" })).toBe(1);
      expect(delta("tokensmith_requests_total", { route: "/token", status: "503", code: "oidc_key_fetch_failed" })).toBe(1);
    } finally {
      broker.env.HOST_OIDC_ISSUER = issuer;
    }
  });

  it("the platform's x-ratelimit-remaining is the main platform's gauge", async () => {
    // One 502 carrying the header (the broker retries the mint, which then succeeds).
    fx.sim.faults.add({
      method: "POST",
      path: /\/access_tokens$/,
      times: 1,
      respond: { status: 502, headers: { "x-ratelimit-remaining": "4321", "x-ratelimit-limit": "5000" }, body: { message: "Server Error" } },
    });
    expect((await exchange()).status).toBe(200);
    expect(sample(await scrape(adminUrl), "tokensmith_rate_limit_remaining", { platform: "main" })).toBe(4321);
  });

  it("webhook deliveries by outcome (ignored, skipped, queued); push jobs done; the queue's depth", async () => {
    const deliver = async (event: string, payload: unknown) => {
      const raw = JSON.stringify(payload);
      const signature = `sha256=${createHmac("sha256", "metrics-webhook-secret-0123456789abcdef").update(raw).digest("hex")}`;
      const response = await fetch(`${broker.url}/webhook`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-github-event": event, "x-github-delivery": randomUUID(), "x-hub-signature-256": signature },
        body: raw,
      });
      return response.status;
    };
    const push = {
      ref: "refs/heads/main", before: "0".repeat(40), after: "1".repeat(40), created: false, deleted: false, forced: false,
      repository: { id: 1, name: "app", full_name: "octo-org/app", owner: { login: "octo-org", name: "octo-org" } },
      installation: { id: fx.installationId }, sender: { login: "mona" },
    };
    fx.sim.git.createBranch("octo-org/app", "main");
    fx.sim.git.addPullRequest("octo-org/app", { base: "main" });
    fx.sim.git.push("octo-org/app", "main");

    const before = await scrape(adminUrl);
    const value = (text: string, name: string, labels: Record<string, string>) => sample(text, name, labels) ?? 0;
    expect(await deliver("ping", { zen: "Keep it logically awesome." })).toBe(200);
    expect(await deliver("push", push)).toBe(200); // AUTO_UPDATE_BRANCHES off: skipped
    broker.env.AUTO_UPDATE_BRANCHES = "true";
    try {
      expect(await deliver("push", push)).toBe(202);
      let after = await scrape(adminUrl);
      while (value(after, "tokensmith_webhook_jobs_total", { outcome: "done" }) === value(before, "tokensmith_webhook_jobs_total", { outcome: "done" })) {
        await new Promise((r) => setTimeout(r, 20));
        after = await scrape(adminUrl);
      }
      const delta = (outcome: string) => value(after, "tokensmith_webhook_deliveries_total", { outcome }) - value(before, "tokensmith_webhook_deliveries_total", { outcome });
      expect(delta("ignored")).toBe(1);
      expect(delta("auto_update_disabled")).toBe(1);
      expect(delta("queued")).toBe(1);
      expect(value(after, "tokensmith_webhook_jobs_total", { outcome: "done" }) - value(before, "tokensmith_webhook_jobs_total", { outcome: "done" })).toBe(1);
      expect(value(after, "tokensmith_webhook_jobs_total", { outcome: "failed" })).toBe(0);
      expect(sample(after, "tokensmith_webhook_queue_depth")).toBe(0);

      // Five branches at once while the platform is slow: four jobs run (JOB_CONCURRENCY), one waits.
      fx.sim.latencyMs = 400;
      for (const n of [1, 2, 3, 4, 5]) expect(await deliver("push", { ...push, ref: `refs/heads/b${n}` })).toBe(202);
      expect(sample(await scrape(adminUrl), "tokensmith_webhook_queue_depth")).toBe(1);
      fx.sim.latencyMs = 0;
      const doneBefore = value(after, "tokensmith_webhook_jobs_total", { outcome: "done" });
      while (value(after, "tokensmith_webhook_jobs_total", { outcome: "done" }) < doneBefore + 5) {
        await new Promise((r) => setTimeout(r, 20));
        after = await scrape(adminUrl);
      }
      expect(sample(after, "tokensmith_webhook_queue_depth")).toBe(0);
    } finally {
      fx.sim.latencyMs = 0;
      delete broker.env.AUTO_UPDATE_BRANCHES;
    }
  });
});

describe("the key-set snapshot", () => {
  it("a second broker on the same Redis uses the snapshot when the issuer is down, and counts it", async () => {
    const shared = { SERVICE_JWKS_CACHE: REDIS_URL };
    const first = await startBroker({ ...fx.env, ...shared });
    try {
      expect((await postJson(`${first.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" })).status).toBe(200);
    } finally {
      await first.close(); // waits for the snapshot write
    }
    const second = await startBroker({ ...fx.env, ...shared });
    const secondAdmin = startAdmin({ env: { ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1" }, metrics: second.app.broker.metrics, log: second.app.broker.log })!;
    fx.sim.oidc.keyEndpoint = "fail";
    try {
      const url = `http://127.0.0.1:${await secondAdmin.port}`;
      expect((await postJson(`${second.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" })).status).toBe(200);
      const text = await scrape(url);
      expect(sample(text, "tokensmith_key_snapshot_used_total")).toBe(1);
      expect(sample(text, "tokensmith_oidc_key_fetches_total", { result: "failed" })).toBe(1);
    } finally {
      fx.sim.oidc.keyEndpoint = "ok";
      await secondAdmin.close();
      await second.close();
    }
  });
});

describe("calls waiting before they are sent", () => {
  it("a mint that waits for REST points shows in tokensmith_upstream_waiting{for=\"points\"}, and leaves it once they come", async () => {
    // The least budget (5): a cold exchange's lookup (1) fits, its mint (5) then waits for the
    // lookup's point to leave the window, scaled down to 1.5 s: well within the 10 s deadline (a
    // mint whose points cannot come before its deadline is refused at once: token-limits.test.ts).
    const starved = await startBroker({ ...fx.env, UPSTREAM_POINTS_PER_MINUTE: "5" }, { timing: { requestDeadlineMs: 10_000, pointsWindowMs: 1_500 } });
    const starvedAdmin = startAdmin({ env: { ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1" }, metrics: starved.app.broker.metrics, log: starved.app.broker.log })!;
    try {
      const url = `http://127.0.0.1:${await starvedAdmin.port}`;
      const idle = await scrape(url);
      expect(sample(idle, "tokensmith_upstream_waiting", { platform: "main", for: "points" })).toBe(0);
      expect(sample(idle, "tokensmith_upstream_waiting", { platform: "main", for: "concurrency" })).toBe(0);
      const answer = postJson(`${starved.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });
      let waiting: number | undefined;
      for (let i = 0; i < 100 && !waiting; i += 1) {
        waiting = sample(await scrape(url), "tokensmith_upstream_waiting", { platform: "main", for: "points" });
        if (!waiting) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(waiting).toBe(1);
      const minted = await answer;
      expect(minted.status).toBe(200);
      expect(sample(await scrape(url), "tokensmith_upstream_waiting", { platform: "main", for: "points" })).toBe(0);
    } finally {
      await starvedAdmin.close();
      await starved.close();
    }
  });
});

describe("readiness and the durable queue", () => {
  it("/readyz is 503 starting until the broker says it listens", async () => {
    const early = startAdmin({ env: { ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1" }, metrics: broker.app.broker.metrics, log: broker.app.broker.log })!;
    try {
      const url = `http://127.0.0.1:${await early.port}`;
      const starting = await fetch(`${url}/readyz`);
      expect(starting.status).toBe(503);
      expect(await starting.json()).toEqual({ status: "starting" });
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      early.readiness.listening();
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
    } finally {
      await early.close();
    }
  });

  it("with WEBHOOK_QUEUE on Redis, the depth is read from the shared queue", async () => {
    const durable = await startBroker({ ...fx.env, HOST_WEBHOOK_SECRET: "metrics-webhook-secret-0123456789abcdef", WEBHOOK_QUEUE: `${REDIS_URL}?prefix=metrics-${randomUUID()}` });
    const durableAdmin = startAdmin({ env: { ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1" }, metrics: durable.app.broker.metrics, log: durable.app.broker.log })!;
    try {
      const text = await scrape(`http://127.0.0.1:${await durableAdmin.port}`);
      expect(sample(text, "tokensmith_webhook_queue_depth")).toBe(0);
    } finally {
      await durableAdmin.close();
      await durable.close();
    }
  });
});
