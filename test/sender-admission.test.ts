// Admission per sender (server/http/sender-admission.ts, docs/operations.md#senders), over real
// HTTP: a sender over SENDER_REQUESTS_PER_SECOND waits its turn, then is refused 429 sender_limited
// with Retry-After when two seconds' worth of its requests already wait; another sender (another
// loopback address, or behind TRUST_PROXY_HOPS another X-Forwarded-For) is answered meanwhile.
import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it } from "@jest/globals";
import { ERROR_CODES } from "../shared/error-codes.js";
import { startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets } from "./support/fixtures.js";

let broker: TestBroker | undefined;
afterEach(async () => {
  held = undefined;
  if (broker) expectNoSecrets(broker.logs, []);
  await broker?.close();
  broker = undefined;
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
  /** Order in which answers came in, over the whole test. */
  order: number;
}
let answered = 0;

/** One request on a connection of its own, from `localAddress` (every 127.x address is this host's). */
function send(url: string, options: { localAddress?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal } = {}): Promise<Answer> {
  const body = options.body ?? "{}";
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}/token`,
      {
        method: "POST",
        agent: false,
        localAddress: options.localAddress ?? "127.0.0.1",
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...options.headers },
        signal: options.signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString() || "{}"), order: answered++ }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const limitedText = async (b: TestBroker) => (await b.app.broker.metrics.registry.metrics()).split("\n").filter((l) => l.startsWith("tokensmith_senders_limited_total"));
/** How many requests the broker has put to wait and refused so far (its counter, all routes). */
async function limited(b: TestBroker) {
  const count = (outcome: string) =>
    limitedText(b).then((lines) => lines.filter((l) => l.includes(`outcome="${outcome}"`)).reduce((sum, l) => sum + Number(l.split(" ").pop()), 0));
  return { delayed: await count("delayed"), refused: await count("refused") };
}

/** The broker's clock: held by the test while it looks at what waits (a bucket refills only as it moves), else the real one. */
let held: number | undefined;
const moved = { now: () => held ?? Date.now() };
/** Long enough for an answer that should not come to show itself on a quiet machine (never what a check waits on). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
/** Waits (up to 20 s: CI machines are loaded) until the broker has seen what the test sent. */
async function until(done: () => boolean | Promise<boolean>) {
  for (let i = 0; i < 400 && !(await done()); i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(await done()).toBe(true);
}
/** Requests still in flight when a check fails must not fail the next test: their rejections are handled here too. */
function inFlight<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

describe("a sender over its rate", () => {
  it("starts a second's worth at once, the next ones in turn at its rate, and refuses past two seconds' worth waiting", async () => {
    held = Date.now();
    broker = await startBroker({ SENDER_REQUESTS_PER_SECOND: "5" }, moved);
    const got: Answer[] = [];
    // 5 start at once (the bucket), 10 wait (two seconds at 5 a second), 5 are refused at once.
    const all = inFlight(Promise.all(Array.from({ length: 20 }, () => send(broker!.url).then((a) => (got.push(a), a)))));
    await until(async () => got.length >= 10 && (await limited(broker!)).delayed >= 10);
    await settle();
    expect(got.map((a) => a.status).sort()).toEqual([...Array(5).fill(400), ...Array(5).fill(429)]);
    for (const a of got.filter((a) => a.status === 429)) {
      expect(a.body).toEqual({ error: "sender_limited" });
      expect(Number(a.headers["retry-after"])).toBeGreaterThanOrEqual(2);
      expect(a.headers["content-type"]).toMatch(/^application\/json/);
    }
    // A second later, five more (and no more while the clock stands); then the last five.
    held = held! + 1_000;
    await until(() => got.length === 15);
    await settle();
    expect(got).toHaveLength(15);
    held = undefined;
    const answers = await all;
    expect(answers.filter((a) => a.status === 400)).toHaveLength(15);
    for (const a of answers.filter((a) => a.status === 400)) expect(a.body).toEqual({ error: "missing_required_fields" });
    expect(await limitedText(broker)).toEqual(
      expect.arrayContaining([`tokensmith_senders_limited_total{outcome="delayed",route="/token"} 10`, `tokensmith_senders_limited_total{outcome="refused",route="/token"} 5`]),
    );
    // One warning for the refusals, not one per request; naming the sender, not its requests.
    const warnings = broker.logs.filter((l) => l.includes("sender_limited"));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: "warn", sender: "127.0.0.1" });
    // The waiting ones were logged as requests like any other; the refused ones only by the counter.
    expect(broker.logs.filter((l) => l.includes('"msg":"request"'))).toHaveLength(15);
  });

  it("does not slow another sender: its request is answered while the first sender's wait", async () => {
    held = Date.now();
    broker = await startBroker({ SENDER_REQUESTS_PER_SECOND: "2" }, moved);
    const got: Answer[] = [];
    // 2 at once, 4 waiting for a clock that stands still.
    const flood = inFlight(Promise.all(Array.from({ length: 6 }, () => send(broker!.url, { localAddress: "127.0.0.1" }).then((a) => (got.push(a), a)))));
    await until(async () => got.length >= 2 && (await limited(broker!)).delayed >= 4);
    expect(got).toHaveLength(2);
    const other = await send(broker.url, { localAddress: "127.0.0.2" });
    expect(other.status).toBe(400);
    expect(got).toHaveLength(2);
    held = undefined;
    for (const a of await flood) expect(a.status).toBe(400);
  });

  it("refuses a large body without reading it: the connection closes after the answer", async () => {
    held = Date.now();
    broker = await startBroker({ SENDER_REQUESTS_PER_SECOND: "1" }, moved);
    // 1 served, 2 waiting: full.
    const first = inFlight(Promise.all([send(broker.url), send(broker.url), send(broker.url)]));
    await until(async () => (await limited(broker!)).delayed >= 2);
    const big = await send(broker.url, { body: JSON.stringify({ oidcToken: "x".repeat(100 * 1024), owner: "o", repo: "r" }) });
    expect(big.status).toBe(429);
    expect(big.headers.connection).toBe("close");
    expect(big.body).toEqual({ error: "sender_limited" });
    // (agent: false asks for Connection: close itself; this one asks to keep the connection.)
    const small = await send(broker.url, { headers: { connection: "keep-alive" } });
    expect(small.status).toBe(429);
    expect(small.headers.connection).not.toBe("close");
    held = undefined;
    expect((await first).map((a) => a.status)).toEqual([400, 400, 400]);
  });

  it("a waiting request whose client went away spends nothing: the next one takes its turn", async () => {
    held = Date.now();
    broker = await startBroker({ SENDER_REQUESTS_PER_SECOND: "2" }, moved);
    await Promise.all([send(broker.url), send(broker.url)]);
    // The abandoned one waits first, the other behind it (each seen waiting by the broker before the next is sent).
    const gone = new AbortController();
    const abandoned = send(broker.url, { signal: gone.signal }).catch((error: Error) => error);
    await until(async () => (await limited(broker!)).delayed >= 1);
    let next: Answer | undefined;
    const waiting = inFlight(send(broker.url).then((a) => (next = a)));
    await until(async () => (await limited(broker!)).delayed >= 2);
    gone.abort();
    expect(await abandoned).toMatchObject({ name: "AbortError" });
    // The broker has seen the client go: only the waiting request's connection is left.
    await until(async () => (await broker!.connections()) === 1);
    // Half a second: one start. It goes to the request still waiting, not to the abandoned one.
    held = held! + 500;
    await until(() => next !== undefined);
    expect(next?.status).toBe(400);
    await waiting;
    // Nothing was logged for the abandoned one: it never started.
    expect(broker.logs.filter((l) => l.includes('"msg":"request"'))).toHaveLength(3);
  });

  it("0 switches the limit off", async () => {
    broker = await startBroker({ SENDER_REQUESTS_PER_SECOND: "0" });
    const answers = await Promise.all(Array.from({ length: 60 }, () => send(broker!.url)));
    for (const a of answers) expect(a.status).toBe(400);
    expect(await limitedText(broker)).toEqual([]);
    expect(broker.logs.filter((l) => l.includes("TRUST_PROXY_HOPS"))).toEqual([]);
  });
});

describe("who the sender is", () => {
  it("without TRUST_PROXY_HOPS, X-Forwarded-For changes nothing: a client cannot leave its own bucket", async () => {
    held = Date.now();
    broker = await startBroker({ SENDER_REQUESTS_PER_SECOND: "2" }, moved);
    // One sender whatever the header says: 2 start, 4 wait, 2 are refused.
    const all = inFlight(Promise.all(Array.from({ length: 8 }, (_, i) => send(broker!.url, { headers: { "x-forwarded-for": `203.0.113.${i}` } }))));
    await until(async () => (await limited(broker!)).delayed + (await limited(broker!)).refused >= 6);
    expect(await limited(broker)).toEqual({ delayed: 4, refused: 2 });
    held = undefined;
    expect((await all).filter((a) => a.status === 429)).toHaveLength(2);
    // The operator is told once that a proxy seems to be in front and is not declared.
    const told = broker.logs.filter((l) => l.includes("TRUST_PROXY_HOPS is 0"));
    expect(told).toHaveLength(1);
    expect(JSON.parse(told[0]!)).toMatchObject({ level: "warn", setting: "TRUST_PROXY_HOPS" });
  });

  it("with TRUST_PROXY_HOPS=1, each address the proxy saw is a sender of its own", async () => {
    held = Date.now();
    broker = await startBroker({ SENDER_REQUESTS_PER_SECOND: "1", TRUST_PROXY_HOPS: "1" }, moved);
    // 6 clients behind one proxy, each once: none waits. A client forging an extra hop is still itself.
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => send(broker!.url, { headers: { "x-forwarded-for": `198.51.100.7, 203.0.113.${i}` } })));
    for (const a of answers) expect(a.status).toBe(400);
    expect(await limited(broker)).toEqual({ delayed: 0, refused: 0 });
    const same = inFlight(Promise.all(Array.from({ length: 5 }, () => send(broker!.url, { headers: { "x-forwarded-for": `10.9.9.9, 203.0.113.0` } }))));
    // 203.0.113.0 has spent its second (the clock stands): 2 wait, 3 are refused.
    await until(async () => (await limited(broker!)).delayed + (await limited(broker!)).refused >= 5);
    expect(await limited(broker)).toEqual({ delayed: 2, refused: 3 });
    held = undefined;
    expect((await same).filter((a) => a.status === 429)).toHaveLength(3);
    expect(broker.logs.filter((l) => l.includes("TRUST_PROXY_HOPS is 0"))).toEqual([]);
  });

  it("the code is in the shared table as a retryable 429", () => {
    expect(ERROR_CODES.sender_limited).toMatchObject({ status: 429, retryable: true });
  });
});
