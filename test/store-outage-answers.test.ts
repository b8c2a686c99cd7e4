// Redis trouble must not empty the load balancer nor lose a webhook silently (issue 40, item 4), on
// the built broker as operators run it:
// - a black-holed store (accepts the connection, never answers) costs /token one store time bound
//   at most, not one per store call per request: the store is skipped for a few seconds after a
//   failure (server/kv/store-breaker.ts);
// - a push while WEBHOOK_QUEUE's Redis is down is answered 503 webhook_queue_unavailable with
//   Retry-After (not 500), its delivery id logged for the operator to redeliver; accepted again
//   once Redis is back.
import { createServer, type Server, type Socket } from "node:net";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { signatureFor } from "../server/webhook/verify-signature.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { ownRedis, type OwnRedis } from "./support/redis-server.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const SECRET = "outage-webhook-secret-0123456789abcdef";
let fx: TokenFixture;
const secrets: string[] = [];
const logs: string[] = [];
beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(logs, [...secrets, SECRET, fx.app.privateKeyPem]);
});

async function withBroker(env: Record<string, string>, run: (broker: BrokerProcess) => Promise<void>) {
  const broker = await spawnBroker({ ...fx.env, ...env });
  try {
    await run(broker);
  } finally {
    await broker.stop();
    logs.push(...broker.lines);
  }
}

async function mint(broker: BrokerProcess): Promise<{ status: number; ms: number }> {
  const oidcToken = await fx.sim.oidc.sign();
  secrets.push(oidcToken);
  const started = performance.now();
  const response = await fetch(`${broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ owner: "octo-org", repo: "app", oidcToken }) });
  const body = (await response.json()) as { token?: string };
  if (body.token) secrets.push(body.token);
  return { status: response.status, ms: performance.now() - started };
}

/** A TCP server that takes connections and never answers: a Redis behind a dropped route. */
async function blackHole(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("a store that does not answer", () => {
  it("costs /token one store bound (500 ms) at most: the requests after the first are decided in well under it", async () => {
    const hole = await blackHole();
    try {
      await withBroker({ SERVICE_JWKS_CACHE: hole.url, LEGACY_QUOTA_KV: hole.url }, async (broker) => {
        const first = await mint(broker);
        expect(first.status).toBe(200);
        // Within the breaker's 3 s: every store call is skipped. Without it each /token waited
        // the bound for each store call (the replay claim's lock, the policy cache read, …).
        const next: number[] = [];
        for (let i = 0; i < 5; i += 1) {
          const answer = await mint(broker);
          expect(answer.status).toBe(200);
          next.push(answer.ms);
        }
        next.sort((a, b) => a - b);
        // Generous on a shared machine: the median well under the one 500 ms bound a call would wait.
        expect(next[2]).toBeLessThan(400);
      });
    } finally {
      await hole.close();
    }
  }, 60_000);
});

describe("/webhook while WEBHOOK_QUEUE's Redis is down", () => {
  let redis: OwnRedis;
  let installationId: number;
  beforeAll(async () => {
    installationId = fx.sim.addInstallation({ appId: fx.app.id, account: "outage-org", permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
    fx.sim.repository("outage-org", "app");
    fx.sim.git.createBranch("outage-org/app", "main");
    redis = await ownRedis();
    await redis.start();
  }, 90_000);
  afterAll(async () => {
    await redis.stop();
  });

  const push = async (broker: BrokerProcess, deliveryId: string) => {
    const raw = JSON.stringify({
      ref: "refs/heads/main",
      before: "0".repeat(40),
      after: randomUUID().replaceAll("-", "").padEnd(40, "0"),
      deleted: false,
      repository: { id: 1, name: "app", full_name: "outage-org/app", owner: { login: "outage-org" } },
      installation: { id: installationId },
    });
    const response = await fetch(`${broker.url}/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": deliveryId, "x-hub-signature-256": signatureFor(SECRET, raw) },
      body: raw,
    });
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: (await response.json()) as Record<string, unknown> };
  };

  it("answers 503 webhook_queue_unavailable with Retry-After, logs the delivery id to redeliver, and queues again once Redis is back", async () => {
    await withBroker({ HOST_WEBHOOK_SECRET: SECRET, AUTO_UPDATE_BRANCHES: "on", WEBHOOK_QUEUE: `${redis.url}?prefix=outage-${randomUUID()}` }, async (broker) => {
      expect((await push(broker, randomUUID())).status).toBe(202);

      await redis.stop();
      const lost = randomUUID();
      const refused = await push(broker, lost);
      expect(refused).toEqual({ status: 503, retryAfter: "30", body: expect.objectContaining({ error: "webhook_queue_unavailable" }) });
      // The log is written asynchronously: the line is awaited, not expected at once.
      const reportedLine = () => broker.lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry.delivery === lost && entry.level === "error");
      for (let attempt = 0; attempt < 40 && !reportedLine(); attempt += 1) await new Promise((resolve) => setTimeout(resolve, 100));
      const reported = reportedLine();
      expect(reported).toMatchObject({ event: "push", repository: "outage-org/app", code: "webhook_queue_unavailable", msg: expect.stringContaining("redeliver") });

      await redis.start();
      // The redelivery (same delivery id, as GitHub's redeliver sends it) is taken once Redis answers.
      let again = await push(broker, lost);
      for (let attempt = 0; attempt < 40 && again.status !== 202; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        again = await push(broker, lost);
      }
      expect(again.status).toBe(202);
    });
  }, 120_000);
});
