// Issue 24, item 1: bodies nobody has authenticated yet are budgeted per route and by the bytes
// they have actually delivered, so idle or slow /webhook (or /sign) bodies cannot turn /token away.
// Before the fix, 40 idle /webhook connections that had sent ~300 bytes each but declared 64 MiB
// in all made every /token answer 503 server_busy until the body read deadline cut them.
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { chunkFrame, openRaw, parseAnswer, pump, until, type RawConnection } from "./support/raw-connection.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const MIB = 1024 * 1024;
const WEBHOOK_SECRET = "webhook-secret-for-hardening-body-budget";
const SIGN_SECRET = "sign-secret-for-hardening-body-budget";
const PREFIX = '{"zen":"'.padEnd(300, "x"); // 300 bytes of a body that never ends

const webhookHead = (length: number | "chunked") =>
  `POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-GitHub-Event: ping\r\nX-Hub-Signature-256: sha256=${"0".repeat(64)}\r\n` +
  (length === "chunked" ? "Transfer-Encoding: chunked\r\n\r\n" : `Content-Length: ${length}\r\n\r\n`);
const tokenHead = (length: number) => `POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

let fx: TokenFixture;
const logs: string[] = [];
const secrets: string[] = [WEBHOOK_SECRET, SIGN_SECRET];
beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(logs, [...secrets, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
});

/** A /token exchange for octo-org/app; `path` "/token" takes the direct route, "/token?…" goes through Express. */
async function exchange(url: string, path: string): Promise<{ status: number; ms: number }> {
  const oidcToken = await fx.sim.oidc.sign();
  secrets.push(oidcToken);
  const started = performance.now();
  const res = await postJson(`${url}${path}`, { oidcToken, owner: "octo-org", repo: "app" });
  const ms = performance.now() - started;
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return { status: res.status, ms };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describe("/token is never starved by bodies on other routes (the built broker)", () => {
  let broker: BrokerProcess;
  const idle: RawConnection[] = [];
  afterAll(async () => {
    for (const raw of idle) raw.socket.destroy();
    await broker?.stop();
    logs.push(...(broker?.lines ?? []));
  });

  it("80 idle /webhook connections (64 MiB declared by 40 of them, 25 MiB by each of 40 more) and 10 idle /sign bodies: every /token answers 200, direct and through Express", async () => {
    broker = await spawnBroker({ ...fx.env, HOST_WEBHOOK_SECRET: WEBHOOK_SECRET, PROCESS_TRIGGER_SECRET: SIGN_SECRET });
    expect((await exchange(broker.url, "/token")).status).toBe(200); // warm: keys and installation fetched

    // 40 connections whose declared lengths add up to exactly 64 MiB (what the single budget held
    // in all), then 40 declaring the webhook limit each; every one sends 300 bytes and stops.
    const each = Math.floor((64 * MIB) / 40);
    const lengths = [...Array.from({ length: 39 }, () => each), 64 * MIB - 39 * each, ...Array.from({ length: 40 }, () => 25 * MIB)];
    for (const length of lengths) {
      const raw = await openRaw(broker.url, webhookHead(length));
      raw.socket.write(PREFIX);
      idle.push(raw);
    }
    // Authenticated /sign bodies (read after the bearer check) that stop after 1 MiB of 20 MiB.
    for (let i = 0; i < 10; i++) {
      const raw = await openRaw(broker.url, `POST /sign HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${SIGN_SECRET}\r\nContent-Type: application/json\r\nContent-Length: ${20 * MIB}\r\n\r\n`);
      raw.socket.write(Buffer.alloc(MIB, "x"));
      idle.push(raw);
    }
    await until(() => idle.every((raw) => raw.socket.writableLength === 0), "every idle body handed to the kernel");

    const answers: Array<{ status: number; ms: number }> = [];
    for (let i = 0; i < 20; i++) answers.push(await exchange(broker.url, i % 2 === 0 ? "/token" : `/token?via=express&i=${i}`));
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200));
    // Not held up behind the idle bodies either: the median exchange (a mint each, the
    // simulator's RS256 signatures included) is far below a second even on a busy machine.
    expect(median(answers.map((a) => a.ms))).toBeLessThan(1_000);

    // The idle bodies are held, not refused: none of them has had an answer.
    expect(idle.filter((raw) => raw.text() !== "").map((raw) => raw.text().slice(0, 40))).toEqual([]);
  });
});

describe("each route's budget counts the bytes its bodies have delivered (in process)", () => {
  let broker: TestBroker;
  afterAll(async () => {
    await broker?.close();
    logs.push(...(broker?.logs ?? []));
  });

  it("idle bodies hold what they sent, not what they declared, until the read deadline cuts them with 408 and gives every byte back", async () => {
    broker = await startBroker({ ...fx.env, HOST_WEBHOOK_SECRET: WEBHOOK_SECRET }, { timing: { bodyReadTimeoutMs: 2_000 } });
    const budgets = broker.app.unauthenticatedBodies;
    const webhooks: RawConnection[] = [];
    for (let i = 0; i < 40; i++) {
      const raw = await openRaw(broker.url, webhookHead(25 * MIB));
      raw.socket.write(PREFIX);
      webhooks.push(raw);
    }
    const tokens: RawConnection[] = [];
    for (let i = 0; i < 5; i++) {
      const raw = await openRaw(broker.url, tokenHead(60 * 1024));
      raw.socket.write(PREFIX);
      tokens.push(raw);
    }
    await until(() => budgets.webhook.held === 40 * 300 && budgets.token.held === 5 * 300, "every body's 300 bytes held");
    expect((await exchange(broker.url, "/token")).status).toBe(200);

    for (const raw of [...webhooks, ...tokens]) {
      const cut = parseAnswer((await raw.closed).text);
      expect(cut.status).toBe(408);
      expect(cut.headers.connection).toBe("close");
      expect(cut.body).toEqual({ error: "request_timeout" });
    }
    expect(budgets.webhook.held).toBe(0);
    expect(budgets.token.held).toBe(0);
  });

  it("a /webhook body past /webhook's budget gets 503 server_busy with Retry-After, read while still sending; /token is served meanwhile; every byte comes back", async () => {
    await broker.close();
    broker = await startBroker({ ...fx.env, HOST_WEBHOOK_SECRET: WEBHOOK_SECRET }, { timing: { bodyReadTimeoutMs: 8_000 } });
    const budgets = broker.app.unauthenticatedBodies;
    expect(budgets.webhook.limit).toBe(64 * MIB);
    // Two bodies that have really sent 24 MiB each of their 25 MiB.
    const holders: RawConnection[] = [];
    for (let i = 1; i <= 2; i++) {
      const raw = await openRaw(broker.url, webhookHead(25 * MIB));
      raw.socket.write(Buffer.alloc(24 * MIB, "x"));
      await until(() => budgets.webhook.held === i * 24 * MIB, `body ${i}'s 24 MiB held`);
      holders.push(raw);
    }
    expect((await exchange(broker.url, "/token")).status).toBe(200);

    // A chunked one passes the remaining 16 MiB: refused as it does, and it reads the 503.
    const chunked = await openRaw(broker.url, webhookHead("chunked"));
    await pump(chunked, chunkFrame(256 * 1024), 20 * MIB);
    const answer = parseAnswer((await chunked.closed).text);
    expect(answer.status).toBe(503);
    expect(answer.headers["retry-after"]).toBe("2");
    expect(answer.headers.connection).toBe("close");
    expect(answer.body).toEqual({ error: "server_busy" });
    expect(budgets.webhook.held).toBe(48 * MIB); // what the chunked body took is back
    expect(budgets.token.held).toBe(0);
    expect((await exchange(broker.url, "/token?via=express")).status).toBe(200);

    for (const raw of holders) raw.socket.destroy();
    await until(() => budgets.webhook.held === 0, "the aborted bodies' bytes given back");

    // With the budget free again, a signed delivery is served.
    const body = JSON.stringify({ zen: "Keep it logically awesome." });
    const signature = `sha256=${createHmac("sha256", WEBHOOK_SECRET).update(body).digest("hex")}`;
    const ok = await fetch(`${broker.url}/webhook`, { method: "POST", headers: { "content-type": "application/json", "x-github-event": "ping", "x-hub-signature-256": signature }, body });
    expect(ok.status).toBe(200);
    expect(broker.logs.filter((l) => l.includes('"status":503') && l.includes('"code":"server_busy"'))).toHaveLength(1);
  });

  it("an authenticated body (/sign, after its bearer check) counts against neither budget", async () => {
    await broker.close();
    broker = await startBroker({ PROCESS_TRIGGER_SECRET: SIGN_SECRET, HOST_WEBHOOK_SECRET: WEBHOOK_SECRET });
    const budgets = broker.app.unauthenticatedBodies;
    const sign = await openRaw(broker.url, `POST /sign HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${SIGN_SECRET}\r\nContent-Length: ${19 * MIB}\r\n\r\n{"repo":"`);
    sign.socket.write(Buffer.alloc(4 * MIB, "x"));
    // A webhook body sent after it on another connection is counted once it arrives; by then the
    // broker has long been reading the /sign bytes, and they are in neither budget.
    const webhook = await openRaw(broker.url, webhookHead(1000));
    await until(() => sign.socket.writableLength === 0, "the /sign bytes handed to the kernel");
    webhook.socket.write(PREFIX);
    await until(() => budgets.webhook.held === 300, "the webhook's 300 bytes held");
    expect(budgets.token.held).toBe(0);
    sign.socket.destroy();
    webhook.socket.destroy();
    await until(() => budgets.webhook.held === 0, "the webhook's bytes given back");
  });
});
