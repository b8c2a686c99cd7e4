// Property-based hostile input over all four routes: arbitrary methods, paths, headers, content
// types and bodies, and bodies too big to read. Every answer is JSON with a code from shared/'s table
// at that code's status, no 500 other than the documented one, and the broker keeps serving
// afterwards. Wrong types in each route's fields: test/hostile-input-fields.test.ts.
import { describe, expect, it } from "@jest/globals";
import { Agent } from "node:http";
import { connect, createServer } from "node:net";
import fc from "fast-check";
import { postJson } from "./support/broker.js";
import { broker, contentTypeArb, fx, hostileJson, methodArb, pathArb, RUNS, SECRET, send, useHostileBroker } from "./support/hostile-broker.js";
import { rawRequest } from "./support/raw-request.js";

useHostileBroker();

describe("the raw request helper", () => {
  it.each(["DELETE", "OPTIONS", "POST", "PUT", "PATCH", "FOO"])("frames a %s body with Content-Length", async (method) => {
    const seen = await new Promise<string>((resolve, reject) => {
      const server = createServer((socket) => {
        let text = "";
        socket.on("data", (chunk) => {
          text += String(chunk);
          if (text.endsWith("\r\n\r\nGET")) {
            socket.end("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            server.close();
            resolve(text);
          }
        });
      }).listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number };
        rawRequest(`http://127.0.0.1:${port}`, { method, path: "/", body: "GET", agent: new Agent({ keepAlive: true }) }).catch(reject);
      });
    });
    expect(seen).toMatch(/\r\ncontent-length: 3\r\n/i);
  });

  it.each(["DELETE", "OPTIONS"])("a %s with a body leaves its keep-alive connection fit for a HEAD", async (method) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 }); // one socket: the HEAD goes on the same connection
    try {
      const first = await rawRequest(broker.url, { method, path: "/webhook", body: "GET", agent });
      expect(first.status).toBe(405);
      const head = await rawRequest(broker.url, { method: "HEAD", path: "/webhook", agent });
      expect(head.status).toBe(405);
      expect(head.headers.connection).toBe("keep-alive");
    } finally {
      agent.destroy();
    }
  });
});

describe("hostile input", () => {
  it("arbitrary methods, paths, headers and bodies", async () => {
    await fc.assert(
      fc.asyncProperty(methodArb, pathArb, contentTypeArb, fc.option(fc.string({ maxLength: 80 })), hostileJson, async (method, path, type, auth, body) => {
        const headers: Record<string, string> = {};
        if (type) headers["content-type"] = type;
        if (auth !== null) headers.authorization = auth;
        await send(method, path, headers, body);
      }),
      { numRuns: RUNS },
    );
  });

  it("over-size bodies answer 413 payload_too_large on every route that takes a body", async () => {
    const huge = Buffer.alloc(26 * 1024 * 1024, "x"); // bytes: written three times, never encoded
    for (const path of ["/token", "/sign", "/webhook"]) {
      const answer = await rawRequest(broker.url, { method: "POST", path, headers: { "content-type": "application/json", authorization: `Bearer ${SECRET}`, "x-hub-signature-256": "sha256=00" }, body: huge });
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.text)).toEqual({ error: "payload_too_large" });
    }
  });

  it.each(["/token", "/sign", "/webhook"])("refuses a declared 100 MB body on %s after a few bytes, without waiting for the rest", async (path) => {
    const { port } = new URL(broker.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.write(
          `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer ${SECRET}\r\n` +
            `X-Hub-Signature-256: sha256=00\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n{"oidcToken":"`,
        );
      });
      let text = "";
      socket.on("data", (chunk) => (text += String(chunk)));
      socket.on("close", () => resolve(text)); // the broker closes: it does not wait for 100 MB
      socket.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('{"error":"payload_too_large"}');
  });

  it("refuses a chunked /token body as soon as it passes 64 KiB, while the client is still sending", async () => {
    const { port } = new URL(broker.url);
    const chunk = `4000\r\n${"x".repeat(0x4000)}\r\n`; // 16 KiB chunks
    const { answer, sent } = await new Promise<{ answer: string; sent: number }>((resolve, reject) => {
      let sent = 0;
      let text = "";
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.write("POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
        const pump = () => {
          while (text === "" && sent < 4096 * 0x4000 && socket.writable) {
            sent += 0x4000;
            if (!socket.write(chunk)) return void socket.once("drain", pump);
          }
        };
        pump();
      });
      socket.on("data", (data) => (text += String(data)));
      socket.on("close", () => resolve({ answer: text, sent }));
      socket.on("error", () => resolve({ answer: text, sent })); // a reset after the answer is fine
      setTimeout(() => reject(new Error("no answer")), 10_000).unref();
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(sent).toBeLessThan(4096 * 0x4000); // it stopped reading: the client could not send all 64 MiB
  });

  it("is still serving a real exchange afterwards", async () => {
    const res = await postJson(`${broker.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });
    expect(res.status).toBe(200);
  });
});
