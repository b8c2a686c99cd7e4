// Connections opened ahead of need (server/upstream-connections.ts): requests take them instead
// of opening their own; unclaimed ones close after their idle time; one that fails or is closed
// before it is taken costs nothing but a new connection. Against a real HTTP server on loopback,
// counting the connections it accepts; and a fresh /releases crawl behind the emulated link.
import { afterEach, describe, expect, it } from "@jest/globals";
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { idleConnections, preconnect, readyConnections } from "../server/upstream-connections.js";
import { upstreamFetch } from "../server/upstream-fetch.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

/** An HTTP server that counts the connections it accepted and holds open. */
async function countingServer(): Promise<{ origin: string; accepted: () => number; open: () => number; server: Server; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((_req, res) => {
    res.setHeader("content-type", "application/json");
    res.end('{"ok":true}');
  });
  server.on("connection", (socket: Socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, accepted: () => accepted, open: () => sockets.size, server, sockets };
}

const until = async (check: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe("connections opened ahead", () => {
  it("are taken by the next requests: no request opens one of its own", async () => {
    const target = await countingServer();
    expect(preconnect(target.origin, 3)).toBe(3);
    expect(readyConnections(target.origin)).toBe(3);
    await until(() => target.accepted() === 3);
    const answers = await Promise.all([0, 1, 2].map(async () => (await upstreamFetch(`${target.origin}/x`)).json()));
    expect(answers).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    expect(target.accepted()).toBe(3);
    // Back in the pool, idle: asking for three again opens none.
    await until(() => idleConnections(target.origin) === 3);
    expect(preconnect(target.origin, 3)).toBe(0);
    expect(preconnect(target.origin, 5)).toBe(2);
    await until(() => target.accepted() === 5);
  });

  it("close when nobody takes them within their idle time", async () => {
    const target = await countingServer();
    expect(preconnect(target.origin, 2, 200)).toBe(2);
    await until(() => target.accepted() === 2);
    expect(target.open()).toBe(2);
    await until(() => target.open() === 0);
    expect(readyConnections(target.origin)).toBe(0);
    // A request afterwards opens its own, as without them.
    expect(await (await upstreamFetch(`${target.origin}/x`)).json()).toEqual({ ok: true });
    expect(target.accepted()).toBe(3);
  });

  it("cost a request nothing but a new connection when they failed or were closed before it came", async () => {
    const target = await countingServer();
    preconnect(target.origin, 2);
    await until(() => target.open() === 2);
    for (const socket of target.sockets) socket.destroy(); // the server drops both while they wait
    await until(() => readyConnections(target.origin) === 0);
    expect(await (await upstreamFetch(`${target.origin}/x`)).json()).toEqual({ ok: true });
    expect(target.accepted()).toBe(3);

    // Nothing listens: opening fails quietly, and nothing is left waiting.
    const gone = await countingServer();
    await closers.pop()!();
    expect(preconnect(gone.origin, 2)).toBe(2);
    await until(() => readyConnections(gone.origin) === 0);
    await expect(upstreamFetch(`${gone.origin}/x`)).rejects.toThrow("fetch failed");
  });

  it("are never opened for an origin that is not http(s), nor past the cap", async () => {
    expect(preconnect("not a url", 3)).toBe(0);
    expect(preconnect("file:///etc/passwd", 3)).toBe(0);
    const target = await countingServer();
    expect(preconnect(target.origin, 1_000, 200)).toBe(64);
    await until(() => target.accepted() === 64);
    await until(() => target.open() === 0);
  });
});
