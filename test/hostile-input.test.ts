// Property-based hostile input over all four routes: arbitrary methods, paths, headers, content
// types and bodies. Every answer is JSON with a code from shared/'s table at that code's status,
// no 500 other than the documented one, and the broker keeps serving afterwards.
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Agent } from "node:http";
import { connect, createServer } from "node:net";
import fc from "fast-check";
import { ERROR_CODES, isErrorCode } from "../shared/error-codes.js";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { rawRequest, type RawAnswer } from "./support/raw-request.js";

const SECRET = "trigger-secret-for-hostile-tests";
const WEBHOOK_SECRET = "webhook-secret-for-hostile-tests";
const RUNS = Number(process.env.HOSTILE_RUNS || 2500); // × 4 properties ≥ 10,000 requests

let fx: TokenFixture;
let broker: TestBroker;
let validToken: string;

beforeAll(async () => {
  fx = await tokenFixture();
  broker = await startBroker({
    ...fx.env,
    PROCESS_TRIGGER_SECRET: SECRET,
    HOST_WEBHOOK_SECRET: WEBHOOK_SECRET,
    AUTO_UPDATE_BRANCHES: "on",
  }, { retry: { attempts: 1, baseDelayMs: 1, maxWaitMs: 0 } });
  validToken = await fx.sim.oidc.sign();
});
afterAll(async () => {
  await broker.close();
  await fx.sim.close();
  expectNoSecrets(broker.logs, [validToken, SECRET, WEBHOOK_SECRET, fx.app.privateKeyPem]);
});

/** Whatever came back must be the spec's kind of answer. */
function expectWellFormed(answer: RawAnswer, method: string): void {
  expect(answer.headers["content-type"] ?? "application/json").toMatch(/application\/json/);
  if (method === "HEAD") {
    // No body to read: an unknown path is 404, a route 405.
    expect([404, 405]).toContain(answer.status);
    return;
  }
  const body: unknown = JSON.parse(answer.text);
  expect(body).not.toBeNull();
  expect(typeof body).toBe("object");
  if (answer.status >= 400) {
    const { error } = body as { error?: unknown };
    if (!isErrorCode(error)) throw new Error(`unknown error code in ${answer.status} ${answer.text.slice(0, 200)}`);
    expect(answer.status).toBe(ERROR_CODES[error].status);
    // The one documented 500.
    if (answer.status === 500) expect(error).toBe("github_installation_lookup_failed");
  }
}

const ROUTES = ["/token", "/sign", "/releases", "/webhook"];
const methodArb = fc.oneof(fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"), fc.stringMatching(/^[A-Z]{1,10}$/));
const pathArb = fc.oneof(
  fc.constantFrom(...ROUTES),
  fc.constantFrom(...ROUTES).map((r) => `${r}?${encodeURIComponent("x")}=1`),
  fc.webPath().map((p) => (p.startsWith("/") ? p : `/${p}`)),
  fc.stringMatching(/^\/[A-Za-z0-9%._~-]{0,300}$/),
);
const contentTypeArb = fc.constantFrom("application/json", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-16", "application/json; charset=latin1", "multipart/form-data; boundary=x", "", "*/*");
const hostileJson = fc.oneof(
  fc.json({ maxDepth: 6 }),
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify({ __proto__: v, constructor: { prototype: v }, oidcToken: v, owner: v, repo: v })),
  fc.nat({ max: 5000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth)),
  fc.nat({ max: 5000 }).map((depth) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth)),
  fc.json().map((s) => s.slice(0, Math.max(0, s.length - 1))),
  fc.string({ maxLength: 200 }),
  fc.integer({ min: 1000, max: 150_000 }).map((n) => JSON.stringify({ oidcToken: "x".repeat(n), owner: "o", repo: "r" })),
);
const fieldValue = fc.oneof(fc.string({ maxLength: 50 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), fc.string(), { maxKeys: 3 }));

async function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  const answer = await rawRequest(broker.url, { method, path, headers, body: method === "GET" || method === "HEAD" ? undefined : body });
  expectWellFormed(answer, method);
  return answer;
}

// node:http's client writes a DELETE's or an OPTIONS's body unframed (no Content-Length, no
// chunked encoding): the broker reads those bytes as the next request on the keep-alive socket,
// and the request sent next on it got their answer (a HEAD: "Data after `Connection: close`").
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

  it("wrong types in every field of /token and /sign, authorised", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("/token", "/sign"),
        fc.record({ oidcToken: fieldValue, owner: fieldValue, repo: fieldValue, ref: fieldValue, runId: fieldValue, sha: fieldValue, branch: fieldValue, expected_head_oid: fieldValue, message: fc.oneof(fieldValue, fc.record({ headline: fieldValue, body: fieldValue })), additions: fc.oneof(fieldValue, fc.array(fc.record({ path: fieldValue, contents: fieldValue }), { maxLength: 3 })), deletions: fc.oneof(fieldValue, fc.array(fc.record({ path: fieldValue }), { maxLength: 3 })), user: fieldValue }, { requiredKeys: [] }),
        async (path, record) => {
          await send("POST", path, { "content-type": "application/json", authorization: `Bearer ${SECRET}` }, JSON.stringify(record));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("signed webhook deliveries with arbitrary events and payloads", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom("push", "ping", "pull_request", "installation"), fc.string({ maxLength: 20 })),
        fc.oneof(hostileJson, fc.record({ ref: fieldValue, deleted: fieldValue, repository: fc.oneof(fieldValue, fc.record({ full_name: fieldValue, name: fieldValue, owner: fc.record({ login: fieldValue }) })), installation: fc.oneof(fieldValue, fc.record({ id: fieldValue })) }).map((v) => JSON.stringify(v))),
        fc.boolean(),
        async (event, body, signed) => {
          const signature = signed ? `sha256=${createHmac("sha256", WEBHOOK_SECRET).update(body).digest("hex")}` : "sha256=" + "0".repeat(64);
          const headers: Record<string, string> = { "content-type": "application/json", "x-hub-signature-256": signature, "x-github-delivery": `${Math.random()}` };
          if (event) headers["x-github-event"] = event;
          await send("POST", "/webhook", headers, body);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("arbitrary /token bodies with a valid OIDC token in them", async () => {
    await fc.assert(
      fc.asyncProperty(fieldValue, fieldValue, fc.boolean(), async (owner, repo, tamper) => {
        const oidcToken = tamper ? `${validToken.slice(0, -4)}AAAA` : validToken;
        await send("POST", "/token", { "content-type": "application/json" }, JSON.stringify({ oidcToken, owner, repo }));
      }),
      { numRuns: RUNS },
    );
  });

  it("over-size bodies answer 413 payload_too_large on every route that takes a body", async () => {
    const huge = "x".repeat(26 * 1024 * 1024);
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
