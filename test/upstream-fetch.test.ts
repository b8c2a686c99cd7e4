// The broker's transport (server/upstream-fetch.ts) over real HTTP on loopback: what it sends, what
// its answers and failures look like to callers written for fetch, and that it follows nothing.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { upstreamFetch } from "../server/upstream-fetch.js";
import { closedPortUrl } from "./support/action-stub-server.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

let server: Server;
let base: string;
let seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      if (req.url === "/redirect") {
        res.writeHead(302, { location: `${base}/elsewhere` });
        return void res.end();
      }
      if (req.url === "/hang") return; // never answers
      if (req.url === "/gzip" || req.url === "/gzip-cut") {
        const whole = gzipSync(JSON.stringify({ ok: true, filler: "ab".repeat(400_000) }));
        const sent = req.url === "/gzip" ? whole : whole.subarray(0, whole.length >> 1);
        res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-encoding": "gzip" });
        return void res.end(sent);
      }
      if (req.url === "/big") {
        res.writeHead(200, { "content-type": "text/plain" });
        return void res.end("x".repeat(1 << 20));
      }
      res.writeHead(201, [["content-type", "application/json; charset=utf-8"], ["x-twice", "a"], ["x-twice", "b"], ["x-RateLimit-Remaining", "41"]]);
      res.end(JSON.stringify({ ok: true, method: req.method }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  seen = [];
});

describe("upstreamFetch", () => {
  it("sends the method, headers and body as given, and answers in fetch's shape", async () => {
    const response = await upstreamFetch(`${base}/app/installations/1/access_tokens`, {
      method: "POST",
      headers: { authorization: "Bearer x", "user-agent": "tokensmith-test", "content-type": "application/json" },
      body: JSON.stringify({ repository_ids: [1] }),
    });
    expect(response.status).toBe(201);
    expect(response.ok).toBe(true);
    expect(response.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    expect(response.headers.get("x-twice")).toBe("a, b");
    expect(response.headers.get("x-ratelimit-remaining")).toBe("41");
    expect(response.headers.get("absent")).toBeNull();
    expect([...response.headers].find(([name]) => name === "x-twice")).toEqual(["x-twice", "a, b"]);
    expect(await response.json()).toEqual({ ok: true, method: "POST" });
    await expect(response.text()).rejects.toThrow(TypeError);
    expect(seen).toEqual([
      expect.objectContaining({ method: "POST", url: "/app/installations/1/access_tokens", body: '{"repository_ids":[1]}' }),
    ]);
    expect(seen[0]!.headers).toMatchObject({ authorization: "Bearer x", "user-agent": "tokensmith-test", "content-type": "application/json", "content-length": "22" });
  });

  it("names itself when the caller names no user agent (the platform refuses a request without one), and asks for gzip as fetch does", async () => {
    await (await upstreamFetch(`${base}/plain`)).text();
    expect(seen[0]!.headers["user-agent"]).toBe("tokensmith");
    expect(seen[0]!.headers["accept-encoding"]).toBe("gzip");
  });

  it("decompresses a gzip answer, read whole or chunk by chunk", async () => {
    const expected = { ok: true, filler: "ab".repeat(400_000) };
    expect(await (await upstreamFetch(`${base}/gzip`)).json()).toEqual(expected);
    expect(JSON.parse(await (await upstreamFetch(`${base}/gzip`)).text())).toEqual(expected);
    expect(JSON.parse(new TextDecoder().decode(await (await upstreamFetch(`${base}/gzip`)).arrayBuffer()))).toEqual(expected);
    const chunks: Buffer[] = [];
    for await (const chunk of (await upstreamFetch(`${base}/gzip`)).body as unknown as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
    expect(JSON.parse(Buffer.concat(chunks).toString("utf8"))).toEqual(expected);
    expect(seen.every((s) => s.headers["accept-encoding"] === "gzip")).toBe(true);
  });

  it("a gzip answer cut short fails as a network failure does (fetch's TypeError), read whole or chunk by chunk", async () => {
    const whole = await (await upstreamFetch(`${base}/gzip-cut`)).text().catch((error: unknown) => error);
    expect(whole).toBeInstanceOf(TypeError);
    expect((whole as TypeError).message).toBe("fetch failed");
    expect(((whole as TypeError).cause as { code?: string }).code).toBe("Z_BUF_ERROR");
    const iterated = await (async () => {
      for await (const chunk of (await upstreamFetch(`${base}/gzip-cut`)).body as unknown as AsyncIterable<Uint8Array>) void chunk;
    })().catch((error: unknown) => error);
    expect(iterated).toBeInstanceOf(TypeError);
  });

  it("takes headers as a Headers object or as pairs", async () => {
    await (await upstreamFetch(`${base}/a`, { headers: new Headers({ accept: "application/json" }) })).text();
    await (await upstreamFetch(`${base}/b`, { headers: [["accept", "text/plain"]] })).text();
    expect(seen.map((s) => s.headers.accept)).toEqual(["application/json", "text/plain"]);
  });

  it("follows no redirect: the 3xx is the answer, and nothing goes to its location", async () => {
    const response = await upstreamFetch(`${base}/redirect`, { method: "POST", body: "{}", redirect: "follow" });
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe(`${base}/elsewhere`);
    await response.body!.cancel();
    expect(seen.map((s) => s.url)).toEqual(["/redirect"]);
  });

  it("a dropped body does not hold the connection: the next call is answered", async () => {
    const big = await upstreamFetch(`${base}/big`);
    await big.body!.cancel();
    const next = await upstreamFetch(`${base}/after`);
    expect(next.status).toBe(201);
    await next.text();
  });

  it("an aborted call rejects with the signal's reason, waiting or reading", async () => {
    const controller = new AbortController();
    const reason = new Error("upstream timeout after 50 ms");
    setTimeout(() => controller.abort(reason), 50);
    await expect(upstreamFetch(`${base}/hang`, { signal: controller.signal })).rejects.toBe(reason);
  });

  it("a network failure is fetch's TypeError, its cause naming the error", async () => {
    const failure = await upstreamFetch(`${await closedPortUrl()}/`).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TypeError);
    expect((failure as TypeError).message).toBe("fetch failed");
    expect(((failure as TypeError).cause as { code?: string }).code).toBe("ECONNREFUSED");
  });

  it("leaves what it cannot send as is (a Request) to the global fetch", async () => {
    const response = await upstreamFetch(new Request(`${base}/via-request`, { method: "PUT", body: "x" }));
    expect(response).toBeInstanceOf(Response);
    expect(await response.json()).toEqual({ ok: true, method: "PUT" });
  });
});
