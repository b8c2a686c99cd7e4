// Issue 37 item 4: the action asks the runner for a fresh OIDC token for every POST, so that its
// fallback after a lost answer still works once the primary spent the first token. The bundled
// dist/main in a child process under Node 24 (as the runner runs it); two broker processes sharing
// the OIDC token claims through one Redis (WEBHOOK_QUEUE's, the shared store:
// docs/operations.md#shared-limits); in front of the primary a proxy that forwards the request,
// waits for the broker's whole answer (the token was verified, its jti claimed, a token minted),
// and then resets the connection to the action before a byte of that answer reaches it.
import { randomUUID } from "node:crypto";
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { runStep } from "./support/action-runner.js";
import { node24 } from "./support/action-node24.js";
import { deleteKeysUnder, REDIS_URL } from "./support/redis-url.js";
import { runnerJobEnv } from "./support/runner-env.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

/** WEBHOOK_QUEUE's key prefix (the claims under `<prefix>:oidc-jti:`), deleted afterwards. */
const QUEUE_PREFIX = `lost-answer-${randomUUID().slice(0, 8)}`;
const MINT = /^\/app\/installations\/\d+\/access_tokens$/;

let fx: TokenFixture;
let primary: BrokerProcess;
let fallback: BrokerProcess;
const secrets: string[] = [];

/** What went through the proxy: each request's body and the answer the broker gave it (which the action never got). */
interface Forwarded {
  body: string;
  status: number;
  answer: string;
}

/**
 * A proxy to `target` that loses every answer: the request is forwarded whole, the broker's answer
 * read whole, and then the action's connection is reset (TCP RST) with nothing written to it.
 */
async function startLosingProxy(target: string): Promise<{ url: string; forwarded: Forwarded[]; close(): Promise<void> }> {
  const forwarded: Forwarded[] = [];
  const read = async (stream: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString();
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await read(req);
      const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
        const out = request(`${target}${req.url}`, { method: req.method, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, resolve);
        out.on("error", reject);
        out.end(body);
      });
      forwarded.push({ body, status: upstream.statusCode ?? 0, answer: await read(upstream) });
      res.socket?.resetAndDestroy();
    })().catch(() => res.socket?.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwarded,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

beforeAll(async () => {
  fx = await tokenFixture();
  const env = { ...fx.env, HOST_WEBHOOK_SECRET: "lost-answer-webhook-secret-0123456789", WEBHOOK_QUEUE: `${REDIS_URL}?prefix=${QUEUE_PREFIX}` };
  [primary, fallback] = await Promise.all([spawnBroker(env), spawnBroker(env)]);
  // A job on each first: each process's first claim opens its Redis connection, and one not open
  // within the store's bound (500 ms, a loaded machine) would claim in process only.
  for (const broker of [primary, fallback]) {
    const oidcToken = await fx.sim.oidc.sign();
    const res = await postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
    secrets.push(oidcToken, String(res.body.token));
    expect(res.status).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([primary?.stop(), fallback?.stop()]);
  await fx.sim.close();
  await deleteKeysUnder([QUEUE_PREFIX]);
  expectNoSecrets([...primary.lines, ...fallback.lines], [...secrets, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
}, 30_000);

describe("the primary minted, its answer was lost, the fallback shares its claims", () => {
  it("the action falls back with a fresh OIDC token and gets 200; the first token, spent, is 409 at the fallback", async () => {
    const proxy = await startLosingProxy(primary.url);
    try {
      fx.sim.clearRequests();
      // Under the runner's runtime for this action (action.yml: runs.using: node24).
      const main = await runStep("main", {
        node: node24(),
        inputs: { "auth-mode": "public-app", "broker-url": proxy.url, "broker-fallback-url": fallback.url },
        env: { ...runnerJobEnv(fx.sim), TOKENSMITH_RETRY_BASE_MS: "10" },
      });
      const idTokens = fx.sim.requests.filter((r) => r.path === "/_actions/idtoken").map((r) => (r.response?.body as { value: string }).value);
      secrets.push(...idTokens);

      // The primary verified the first token, claimed it and minted: the answer was a token, lost.
      expect(proxy.forwarded).toHaveLength(1);
      const [lost] = proxy.forwarded as [Forwarded];
      expect(lost.status).toBe(200);
      const lostToken = (JSON.parse(lost.answer) as { token: string }).token;
      expect(fx.sim.tokens.has(lostToken)).toBe(true);
      const firstOidcToken = (JSON.parse(lost.body) as { oidcToken: string }).oidcToken;

      // The action saw no answer, asked the runner again, and the fallback answered 200.
      const unreachable = main.lines.filter((line) => line.startsWith(`tokensmith: attempt 1: ${proxy.url} is unreachable (`));
      expect(unreachable).toHaveLength(1);
      expect(unreachable[0]).toContain("ECONNRESET"); // "read ECONNRESET", or "ECONNRESET: socket hang up"
      expect(main.exitCode).toBe(0);
      expect(idTokens).toHaveLength(2);
      expect(idTokens[0]).toBe(firstOidcToken);
      expect(idTokens[1]).not.toBe(firstOidcToken);
      const token = main.outputs.token!;
      expect(fx.sim.tokens.get(token)?.repositories).toEqual(["app"]);
      expect(token).not.toBe(lostToken);
      expect(fx.sim.requests.filter((r) => r.method === "POST" && MINT.test(r.path))).toHaveLength(2);
      expect(fallback.lines.filter((line) => line.includes('"route":"/token"') && line.includes('"status":200'))).toHaveLength(2); // its warm-up job, and this one

      // Sent again, the first token is refused by the fallback: the primary's claim is shared, so
      // an action that reused its token after a lost answer would have failed here.
      const replay = await postJson(`${fallback.url}/token`, { oidcToken: firstOidcToken, owner: "octo-org", repo: "app" });
      expect([replay.status, replay.body]).toEqual([409, { error: "oidc_token_replayed" }]);
      expect(fx.sim.requests.filter((r) => r.method === "POST" && MINT.test(r.path))).toHaveLength(2);
    } finally {
      await proxy.close();
    }
  }, 90_000);
});
