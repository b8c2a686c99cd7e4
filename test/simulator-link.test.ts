// The emulated link (simulator/link.ts): it carries every byte, in order, and never faster than
// its round trips and bandwidth allow. Lower bounds only (a timer never fires early); how much
// slower a busy machine makes it is the bench's business, not a test's.
import { afterEach, describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { createServer, type Server } from "node:http";
import { connect, createServer as createTcpServer, type AddressInfo } from "node:net";
import { createSimulator, linkFloorMs, startLink, type Link, type Simulator } from "../simulator/index.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

async function link(port: number, options: Parameters<typeof startLink>[1]): Promise<Link> {
  const started = await startLink({ port }, options);
  closers.push(() => started.close());
  return started;
}

/** An echo server: what the client sends comes back, then the server half-closes when the client does. */
async function echoPort(): Promise<number> {
  const server = createTcpServer((socket) => socket.pipe(socket));
  closers.push(async () => {
    server.close();
  });
  return listen(server);
}

function roundTrip(port: number, chunks: Buffer[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: "127.0.0.1" });
    const received: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => received.push(chunk));
    socket.on("end", () => resolve(Buffer.concat(received)));
    socket.on("error", reject);
    socket.on("connect", () => {
      for (const chunk of chunks) socket.write(chunk);
      socket.end();
    });
  });
}

describe("the emulated link", () => {
  it("carries every byte in order, both ways, whatever the chunking", async () => {
    const relay = await link(await echoPort(), { rttMs: 2, mbit: 1000 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ minLength: 1, maxLength: 70_000 }), { minLength: 1, maxLength: 6 }), async (arrays) => {
        const chunks = arrays.map((a) => Buffer.from(a));
        const before = { up: relay.stats.bytesUp, down: relay.stats.bytesDown };
        const back = await roundTrip(relay.port, chunks);
        expect(back.equals(Buffer.concat(chunks))).toBe(true);
        const total = chunks.reduce((sum, c) => sum + c.length, 0);
        expect(relay.stats.bytesUp - before.up).toBe(total);
        expect(relay.stats.bytesDown - before.down).toBe(total);
      }),
      { numRuns: 15 },
    );
  });

  it("takes at least the set-up round trip, one round trip and the bytes' time on the wire", async () => {
    const body = Buffer.alloc(250_000, 7);
    const server = createServer((_req, res) => res.end(body));
    const options = { rttMs: 60, mbit: 10 };
    const relay = await link(await listen(server), options);
    const started = performance.now();
    const response = await fetch(`${relay.url}/`);
    const received = Buffer.from(await response.arrayBuffer());
    const elapsed = performance.now() - started;
    expect(received.equals(body)).toBe(true);
    // set-up (1 RTT) + request and answer (1 RTT) + 250 kB at 10 Mbit (200 ms) = 320 ms at least.
    const floor = linkFloorMs(options, { roundTrips: 2, bytes: body.length });
    expect(floor).toBeCloseTo(320, 0);
    expect(elapsed).toBeGreaterThanOrEqual(floor - 2);
    expect(relay.stats.connections).toBe(1);
    expect(relay.stats.bytesDown).toBeGreaterThan(body.length);
  });

  it("shares its bandwidth between connections, as one real link does", async () => {
    const body = Buffer.alloc(250_000, 3);
    const server = createServer((_req, res) => res.end(body));
    const options = { rttMs: 20, mbit: 10 };
    const relay = await link(await listen(server), options);
    const started = performance.now();
    const answers = await Promise.all([0, 1].map(async () => Buffer.from(await (await fetch(`${relay.url}/`)).arrayBuffer())));
    const elapsed = performance.now() - started;
    expect(answers.every((a) => a.equals(body))).toBe(true);
    expect(relay.stats.connections).toBe(2);
    // Two answers of 250 kB on one 10 Mbit wire: 400 ms of bytes, whatever the connections.
    expect(elapsed).toBeGreaterThanOrEqual(linkFloorMs(options, { roundTrips: 2, bytes: 2 * body.length }) - 2);
  });

  it("counts two set-up round trips when told to (TCP and TLS 1.3)", async () => {
    const server = createServer((_req, res) => res.end("ok"));
    const relay = await link(await listen(server), { rttMs: 50, mbit: 1000, setupRoundTrips: 2 });
    const started = performance.now();
    await (await fetch(`${relay.url}/`, { headers: { connection: "close" } })).text();
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * 50 - 2);
  });

  it("holds a sender back while a window of its bytes is on the link (a server's write ends near the client's last byte)", async () => {
    // 16 MB down a 200 Mbit link: without the window the relay would swallow it all at loopback
    // speed and the server would be done before the client had any of it. With it, the server's
    // last write completes only once the client has most of it: at most the window (256 KiB here)
    // and what the kernel's socket buffers on the relay's side can hold were still to come.
    const body = Buffer.alloc(16_000_000, 3);
    let receivedWhenServerDone = -1;
    let received = 0;
    const server = createServer((_req, res) => {
      res.on("finish", () => (receivedWhenServerDone = received));
      res.end(body);
    });
    const relay = await link(await listen(server), { rttMs: 2, mbit: 200 });
    const response = await fetch(`${relay.url}/`);
    for await (const chunk of response.body!) received += (chunk as Uint8Array).length;
    expect(received).toBe(body.length);
    expect(receivedWhenServerDone).toBeGreaterThan(4_000_000);
  });

  it("passes a server's reset on to the client", async () => {
    const server = createTcpServer((socket) => socket.destroy());
    const relay = await link(await listen(server), { rttMs: 10, mbit: 100 });
    const outcome = await new Promise<string>((resolve) => {
      const socket = connect({ port: relay.port, host: "127.0.0.1" });
      socket.on("data", () => resolve("data"));
      socket.on("close", () => resolve("closed"));
      socket.on("error", () => resolve("closed"));
    });
    expect(outcome).toBe("closed");
  });
});

describe("a simulator behind a link", () => {
  let sim: Simulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it("serves every URL it hands out through the link, and counts the bytes", async () => {
    sim = await createSimulator({ link: { rttMs: 20, mbit: 100 } });
    expect(sim.link).toBeDefined();
    expect(sim.url).toBe(sim.link!.url);
    expect(sim.apiBase.startsWith(sim.link!.url)).toBe(true);
    const discovery = (await (await fetch(`${sim.oidc.issuer}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
    expect(discovery.jwks_uri.startsWith(sim.link!.url)).toBe(true);
    const jwks = await fetch(discovery.jwks_uri);
    expect(jwks.status).toBe(200);
    await jwks.arrayBuffer();
    expect(sim.link!.stats.connections).toBeGreaterThanOrEqual(1);
    expect(sim.link!.stats.bytesDown).toBeGreaterThan(0);
    sim.link!.resetStats();
    expect(sim.link!.stats).toEqual({ connections: 0, bytesUp: 0, bytesDown: 0 });
  });

  it("has no link unless asked", async () => {
    sim = await createSimulator();
    expect(sim.link).toBeUndefined();
  });
});
