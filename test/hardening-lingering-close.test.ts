// Issue 24, item 9: a body over the route's limit gets a 413 the client can read, however large the
// body, because the lingering close after the refusal reads and discards by time, not by bytes.
// Before the fix it stopped once 8 MiB had been thrown away: a client writing a 30 MiB chunked
// body to /token before reading got EPIPE (a reset) instead of its 413. The bound that remains is
// time: a client still sending 5 s after the answer is closed (and one silent for 1 s, as before).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { chunkFrame, openRaw, parseAnswer, pump } from "./support/raw-connection.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const MIB = 1024 * 1024;
const WEBHOOK_SECRET = "webhook-secret-for-hardening-lingering-close";
const LAST_CHUNK = Buffer.from("0\r\n\r\n");

const head = (path: string, framing: "chunked" | number) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-GitHub-Event: ping\r\nX-Hub-Signature-256: sha256=${"0".repeat(64)}\r\n` +
  (framing === "chunked" ? "Transfer-Encoding: chunked\r\n\r\n" : `Content-Length: ${framing}\r\n\r\n`);

let broker: BrokerProcess;
beforeAll(async () => {
  broker = await spawnBroker({ HOST_WEBHOOK_SECRET: WEBHOOK_SECRET });
});
afterAll(async () => {
  await broker?.stop();
});

describe("a body over the limit gets a 413 the client reads, whatever its size", () => {
  // The client writes its whole body before it reads anything (as curl or a script uploading a
  // file does); everything after the route's limit reaches the broker after its answer. Paced
  // ones arrive over a second or so, like a network slower than loopback: the broker's lingering
  // close watches them arrive for that long.
  type Case = [path: string, framing: "chunked" | "declared length", mib: number, pace: { bytes: number; ms: number } | undefined];
  it.each<Case>([
    ["/token", "chunked", 30, { bytes: MIB, ms: 10 }],
    ["/token", "chunked", 100, undefined],
    ["/token", "declared length", 30, { bytes: MIB, ms: 10 }],
    ["/webhook", "chunked", 40, { bytes: 2 * MIB, ms: 10 }],
    ["/webhook", "declared length", 40, { bytes: 2 * MIB, ms: 10 }],
  ])("%s, %s, %i MiB sent whole before reading (pace %j): a complete 413 payload_too_large with Connection: close", async (path, framing, mib, pace) => {
    const raw = await openRaw(broker.url, head(path, framing === "chunked" ? "chunked" : mib * MIB));
    raw.socket.pause(); // reads nothing until it has sent everything
    const chunked = framing === "chunked";
    await pump(raw, chunked ? chunkFrame(0x4000) : Buffer.alloc(0x4000, "x"), mib * MIB, { pace, last: chunked ? LAST_CHUNK : undefined });
    expect(raw.sent()).toBeGreaterThanOrEqual(mib * MIB); // the whole body went out: no reset cut it short
    raw.socket.resume();
    const { text, error } = await raw.closed;
    expect(error).toBeUndefined();
    const answer = parseAnswer(text);
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe("close");
    expect(answer.body).toEqual({ error: "payload_too_large" });
  });
});

describe("the lingering close is bounded by time", () => {
  it("a client still sending 5 s after the 413 (a trickle of 16 KiB every 50 ms) is closed then", async () => {
    const raw = await openRaw(broker.url, head("/token", "chunked"));
    let answeredAt = 0;
    raw.socket.on("data", () => (answeredAt ||= Date.now()));
    const sending = pump(raw, chunkFrame(0x4000), 1024 * MIB, { pace: { bytes: 0x4000, ms: 50 } });
    await sending; // ends when the broker closes the socket: the trickle never reaches 1 GiB
    const closedAt = Date.now();
    const { text } = await raw.closed;
    expect(parseAnswer(text).status).toBe(413);
    expect(raw.sent()).toBeLessThan(1024 * MIB);
    // Closed by the 5 s bound, not by idleness (it never paused 1 s) and not never; generous both ways.
    expect(closedAt - answeredAt).toBeGreaterThanOrEqual(3_000);
    expect(closedAt - answeredAt).toBeLessThan(15_000);
  });
});
