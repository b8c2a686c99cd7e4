// Request bodies at the HTTP edge, over raw sockets: a refusal mid-body is read by a client that is
// still sending (lingering close), and a trickled body is cut. The budgets of bodies nobody has
// authenticated yet: test/hardening-body-budget.test.ts.
import { connect, type Socket } from "node:net";
import { afterAll, describe, expect, it } from "@jest/globals";
import { startBroker } from "./support/broker.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const MIB = 1024 * 1024;
const WEBHOOK_SECRET = "webhook-secret-for-http-bodies";

/** A raw connection: what it has received so far, whether it is closed, and how it ended. */
interface Raw {
  socket: Socket;
  text: () => string;
  closed: Promise<{ text: string; error?: string }>;
  sent: () => number;
  /** While set, the broker's FIN does not end this client's sending. */
  pumping?: boolean;
}

function open(url: string, head: string): Promise<Raw> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    // allowHalfOpen: the broker's FIN after its answer does not stop this client's sending.
    const socket = connect({ port: Number(port), host: "127.0.0.1", allowHalfOpen: true }, () => {
      socket.write(head);
      resolve(raw);
    });
    let text = "";
    let sent = 0;
    let error: string | undefined;
    socket.on("data", (chunk) => (text += String(chunk)));
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code));
    socket.on("end", () => {
      if (!raw.pumping) socket.end();
    });
    const closed = new Promise<{ text: string; error?: string }>((done) => socket.on("close", () => done({ text, error })));
    const raw: Raw = { socket, text: () => text, closed, sent: () => sent };
    const write = socket.write.bind(socket) as (data: string | Buffer) => boolean;
    socket.write = ((data: string | Buffer, ...rest: unknown[]) => {
      sent += data.length;
      return (write as (...args: unknown[]) => boolean)(data, ...rest);
    }) as typeof socket.write;
    socket.once("error", reject);
  });
}

/** Keeps writing `frame` until `total` bytes are written or the socket dies, whatever comes back. */
function pump(raw: Raw, frame: Buffer, total: number): Promise<void> {
  raw.pumping = true;
  return new Promise((resolve) => {
    const next = () => {
      while (raw.sent() < total && !raw.socket.destroyed) {
        if (!raw.socket.write(frame)) return void raw.socket.once("drain", next);
      }
      if (!raw.socket.destroyed) raw.socket.end(); // all sent (the broker read and dropped it): done
      resolve();
    };
    raw.socket.once("close", () => resolve());
    next();
  });
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function parseAnswer(text: string): { status: number; headers: Record<string, string>; body: unknown } {
  const [head, body = ""] = text.split("\r\n\r\n");
  const [statusLine, ...lines] = head!.split("\r\n");
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
  const length = Number(headers["content-length"]);
  expect(Buffer.byteLength(body)).toBeGreaterThanOrEqual(length); // the whole answer arrived
  return { status: Number(statusLine!.split(" ")[1]), headers, body: JSON.parse(body.slice(0, length)) };
}

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
