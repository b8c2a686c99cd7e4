// /readyz tells the truth (issue 29): the built broker (a child process, as operators run it)
// answers 503 with the reasons while it cannot mint — App not configured, the key set never
// fetched — and 200 once it can; a store down alone is told in a 200 (issue 40: /token mints
// without it, and without waiting on it); the reasons name settings and
// issuers, never a store URL or a secret.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { sample } from "./support/metrics-text.js";
import { freePort, ownRedis, type OwnRedis } from "./support/redis-server.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

let fx: TokenFixture;
beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await fx.sim.close();
});

/** A built broker with its admin listener on a free loopback port. */
async function withAdmin(env: Record<string, string | undefined>, run: (admin: string, broker: BrokerProcess) => Promise<void>) {
  const port = await freePort();
  const broker = await spawnBroker({ ...env, ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1" });
  try {
    await run(`http://127.0.0.1:${port}`, broker);
  } finally {
    expect(await broker.stop()).toBe(0);
  }
}

async function readyz(admin: string): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const response = await fetch(`${admin}/readyz`);
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown>, text };
}

/** Polls /readyz until it answers `status` (each probe is an event: no fixed sleep decides). */
async function readyzUntil(admin: string, status: number, withinMs = 20_000, also: (body: Record<string, unknown>) => boolean = () => true) {
  const until = Date.now() + withinMs;
  for (;;) {
    const answer = await readyz(admin);
    if ((answer.status === status && also(answer.body)) || Date.now() > until) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("/readyz on the built broker", () => {
  it("200 ready when the App, the stores and the key set are all there; the key set is fetched at start, not by the first job", async () => {
    await withAdmin(fx.env, async (admin) => {
      // Before any probe or request: the start-up check has fetched the issuer's key set.
      const until = Date.now() + 10_000;
      let fetched = 0;
      while (fetched < 1 && Date.now() < until) {
        fetched = sample(await (await fetch(`${admin}/metrics`)).text(), "tokensmith_oidc_key_fetches_total", { result: "ok" }) ?? 0;
        if (fetched < 1) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(fetched).toBe(1);
      const answer = await readyz(admin);
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ status: "ready" });
    });
  });

  it("503 app_not_configured, naming the missing settings, while HOST_APP_ID and HOST_APP_PRIVATE_KEY are unset; /healthz stays 200", async () => {
    await withAdmin({ HOST_API_BASE: fx.env.HOST_API_BASE, HOST_OIDC_ISSUER: fx.env.HOST_OIDC_ISSUER }, async (admin) => {
      const answer = await readyz(admin);
      expect(answer.status).toBe(503);
      expect(answer.body).toEqual({ status: "not_ready", reasons: [{ reason: "app_not_configured", platform: "main", missing: ["HOST_APP_ID", "HOST_APP_PRIVATE_KEY"] }] });
      expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    });
  });

  it("503 invalid_token_permissions while TOKEN_PERMISSIONS cannot be read (every /token would be 400), naming the setting; /healthz stays 200", async () => {
    await withAdmin({ ...fx.env, TOKEN_PERMISSIONS: "contents:own" }, async (admin, broker) => {
      const answer = await readyzUntil(admin, 503);
      expect(answer.status).toBe(503);
      expect(answer.body).toEqual({ status: "not_ready", reasons: [{ reason: "invalid_token_permissions", setting: "TOKEN_PERMISSIONS", problem: expect.stringContaining("contents") }] });
      expect((await fetch(`${admin}/healthz`)).status).toBe(200);
      const token = await fetch(`${broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ owner: "octo-org", repo: "app", oidcToken: "x" }) });
      expect([token.status, ((await token.json()) as { error: string }).error]).toEqual([400, "invalid_token_permissions"]);
    });
  });

  it("503 app_not_configured with the problem when HOST_APP_ID is not a number (the key is never echoed)", async () => {
    await withAdmin({ ...fx.env, HOST_APP_ID: "not-a-number" }, async (admin, broker) => {
      const answer = await readyz(admin);
      expect(answer.status).toBe(503);
      expect(answer.body).toEqual({ status: "not_ready", reasons: [{ reason: "app_not_configured", platform: "main", missing: [], problem: "HOST_APP_ID is not a numeric App ID" }] });
      expectNoSecrets([answer.text, ...broker.lines], [fx.app.privateKeyPem]);
    });
  });

  it("a store down alone keeps it ready (200, the stores told in `degraded` and tokensmith_store_reachable 0) while /token still mints; no URL in the answer", async () => {
    const redis: OwnRedis = await ownRedis();
    await redis.start();
    try {
      const url = redis.url;
      await withAdmin({ ...fx.env, SERVICE_JWKS_CACHE: url, LEGACY_QUOTA_KV: url, WEBHOOK_QUEUE: `${url}?prefix=readyz-${randomUUID()}`, HOST_WEBHOOK_SECRET: "readyz-webhook-secret-0123456789abcdef" }, async (admin, broker) => {
        const first = await readyzUntil(admin, 200);
        expect([first.status, first.body]).toEqual([200, { status: "ready" }]);
        const reachable = async (setting: string) => sample(await (await fetch(`${admin}/metrics`)).text(), "tokensmith_store_reachable", { setting });
        expect(await reachable("WEBHOOK_QUEUE")).toBe(1);

        await redis.stop();
        const down = await readyzUntil(admin, 200, 20_000, (body) => "degraded" in body);
        expect(down.status).toBe(200);
        expect(down.body).toEqual({
          status: "ready",
          degraded: [
            { reason: "store_unreachable", setting: "SERVICE_JWKS_CACHE" },
            { reason: "store_unreachable", setting: "LEGACY_QUOTA_KV" },
            { reason: "store_unreachable", setting: "WEBHOOK_QUEUE" },
          ],
        });
        expect(down.text).not.toContain(String(redis.port));
        for (const setting of ["SERVICE_JWKS_CACHE", "LEGACY_QUOTA_KV", "WEBHOOK_QUEUE"]) expect(await reachable(setting)).toBe(0);
        // What readiness promises: this instance mints, and without waiting on the store: a stopped
        // Redis refuses at once (no call waits out its 500 ms bound), and once a call has failed the
        // store is skipped for a while (not even a refused connection per call).
        const storeCalls = async () => {
          const text = await (await fetch(`${admin}/metrics`)).text();
          return Object.fromEntries(["ok", "error", "timeout", "skipped"].map((outcome) => [outcome, sample(text, "tokensmith_store_calls_total", { outcome }) ?? Number.NaN]));
        };
        const before = await storeCalls();
        const secrets: string[] = [];
        for (let i = 0; i < 5; i += 1) {
          const oidcToken = await fx.sim.oidc.sign();
          const token = await fetch(`${broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ owner: "octo-org", repo: "app", oidcToken }) });
          expect(token.status).toBe(200);
          secrets.push(oidcToken, ((await token.json()) as { token: string }).token);
        }
        const after = await storeCalls();
        const made = Object.fromEntries(Object.keys(after).map((outcome) => [outcome, after[outcome]! - before[outcome]!]));
        // Nothing answered (a failed call is counted as one, not as a miss), none waited out its
        // bound, and most were never sent: the breaker was open (one failure per few seconds tries).
        expect(made.ok).toBe(0);
        expect(made.timeout).toBe(0);
        expect(made.skipped).toBeGreaterThan(made.error!);
        expectNoSecrets(broker.lines, secrets);

        // /metrics answers without waiting on WEBHOOK_QUEUE's Redis either (it waited on the queue's
        // reconnect backoff, longer each scrape, past Prometheus's 10 s scrape timeout): the queue's
        // depth is unknown (NaN) while tokensmith_store_reachable says the store is down, and each
        // scrape's depth read (counted with the store calls, in the scrape that made it) fails at
        // once, the connection down, or is skipped, the breaker open: none is answered, none waits
        // out the store's bound. (The two storeCalls() scrapes read the depth too; prom-client
        // collects a scrape's metrics at once, so theirs may count in either reading.)
        const scrapesBefore = await storeCalls();
        for (let i = 0; i < 3; i += 1) {
          const text = await (await fetch(`${admin}/metrics`)).text();
          expect(sample(text, "tokensmith_webhook_queue_depth")).toBeNaN();
          expect(sample(text, "tokensmith_store_reachable", { setting: "WEBHOOK_QUEUE" })).toBe(0);
        }
        const scrapesAfter = await storeCalls();
        const scraped = Object.fromEntries(Object.keys(scrapesAfter).map((outcome) => [outcome, scrapesAfter[outcome]! - scrapesBefore[outcome]!]));
        expect(scraped.ok).toBe(0);
        expect(scraped.timeout).toBe(0);
        expect(scraped.error! + scraped.skipped!).toBeGreaterThanOrEqual(3);

        await redis.start();
        const back = await readyzUntil(admin, 200, 20_000, (body) => !("degraded" in body));
        expect(back.body).toEqual({ status: "ready" });
        expect(await reachable("WEBHOOK_QUEUE")).toBe(1);
        // The depth is read again once the queue's connection is back (each probe an event).
        let depth: number | undefined;
        for (const until = Date.now() + 20_000; depth !== 0 && Date.now() < until; ) {
          depth = sample(await (await fetch(`${admin}/metrics`)).text(), "tokensmith_webhook_queue_depth");
          if (depth !== 0) await new Promise((resolve) => setTimeout(resolve, 200));
        }
        expect(depth).toBe(0);
      });
    } finally {
      await redis.stop();
    }
  }, 90_000);

  it("503 key_set_not_fetched while the issuer cannot be reached, 200 once a fetch succeeds", async () => {
    const fault = fx.sim.faults.add({ method: "GET", path: "/oidc/.well-known/openid-configuration", respond: { status: 500, body: { message: "down" } } });
    try {
      await withAdmin(fx.env, async (admin) => {
        const answer = await readyz(admin);
        expect(answer.status).toBe(503);
        expect(answer.body).toEqual({ status: "not_ready", reasons: [{ reason: "key_set_not_fetched", platform: "main", issuer: fx.env.HOST_OIDC_ISSUER }] });
        fault.remove();
        // The next fetch waits out the key set's cooldown (5 s): probes never hammer the issuer.
        const back = await readyzUntil(admin, 200);
        expect(back.body).toEqual({ status: "ready" });
      });
    } finally {
      fault.remove();
    }
  });
});
