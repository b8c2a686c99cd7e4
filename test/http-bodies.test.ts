// Request bodies at the HTTP edge, over raw sockets: a refusal mid-body is read by a client that is
// still sending (lingering close), and a trickled body is cut. The budgets of bodies nobody has
// authenticated yet: test/hardening-body-budget.test.ts.
import { afterAll, describe, expect, it } from "@jest/globals";
import { startBroker } from "./support/broker.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";
import { openRaw as open, parseAnswer, pump, until } from "./support/raw-connection.js";

const MIB = 1024 * 1024;
const WEBHOOK_SECRET = "webhook-secret-for-http-bodies-01234";


describe("a refusal mid-body is read by a client that keeps sending (lingering close)", () => {
  let broker: BrokerProcess;
  afterAll(async () => {
    await broker?.stop();
  });

  // The client reads nothing until it has sent everything: what it keeps sending after the
  // refusal (4 MiB more than the route's limit, chunked; 4 MiB of a declared 30 MiB) reaches the
  // broker after its answer. Within the lingering bounds, the broker reads and drops it.
  it.each([
    ["/token", "chunked", 64 * 1024],
    ["/token", "declared length", 64 * 1024],
    ["/webhook", "chunked", 25 * MIB],
    ["/webhook", "declared length", 25 * MIB],
  ])("%s, %s: a client still sending reads a complete 413 payload_too_large with Connection: close", async (path, framing, limit) => {
    broker ??= await spawnBroker({ HOST_WEBHOOK_SECRET: WEBHOOK_SECRET });
    const chunked = framing === "chunked";
    const block = Buffer.alloc(0x4000, "x");
    const frame = chunked ? Buffer.concat([Buffer.from("4000\r\n"), block, Buffer.from("\r\n")]) : block;
    const raw = await open(
      broker.url,
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Hub-Signature-256: sha256=00\r\n` +
        (chunked ? "Transfer-Encoding: chunked\r\n\r\n" : `Content-Length: ${30 * MIB}\r\n\r\n`),
    );
    raw.socket.pause(); // like a client that writes the whole body before it reads the answer
    await pump(raw, frame, (chunked ? limit : 0) + 4 * MIB);
    raw.socket.resume();
    const { text } = await raw.closed;
    const answer = parseAnswer(text);
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe("close");
    expect(answer.body).toEqual({ error: "payload_too_large" });
  });
});

describe("a trickled body is cut", () => {
  it("a /token body arriving a byte at a time gets 408 request_timeout and the connection closes", async () => {
    const broker = await startBroker({}, { timing: { bodyReadTimeoutMs: 1_000 } });
    try {
      const raw = await open(broker.url, "POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n");
      const trickle = setInterval(() => raw.socket.writable && raw.socket.write("x"), 100);
      const started = Date.now();
      const { text } = await raw.closed;
      clearInterval(trickle);
      const answer = parseAnswer(text);
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual({ error: "request_timeout" });
      expect(answer.headers.connection).toBe("close");
      // Cut within seconds (the deadline, then at most the lingering close's 5 s), not node's 300 s.
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(broker.app.unauthenticatedBodies.token.held).toBe(0);
    } finally {
      await broker.close();
    }
  });
});
