// Routing: unknown paths, wrong methods (with Allow), and routes not yet enabled.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startBroker, type TestBroker } from "./support/broker.js";

let broker: TestBroker;
beforeAll(async () => {
  broker = await startBroker({});
});
afterAll(async () => {
  await broker.close();
});

async function call(method: string, path: string) {
  const res = await fetch(`${broker.url}${path}`, { method });
  const text = await res.text();
  return { status: res.status, allow: res.headers.get("allow"), type: res.headers.get("content-type"), body: text ? JSON.parse(text) : undefined };
}

describe("routing", () => {
  it.each(["/", "/nope", "/token/", "/TOKEN", "/token/extra", "/.env", "/releases.json"])("404 not_found for %s", async (path) => {
    const res = await call("GET", path);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found" });
    expect(res.type).toMatch(/application\/json/);
  });

  it.each([
    ["/token", "GET", "POST"],
    ["/token", "PUT", "POST"],
    ["/token", "DELETE", "POST"],
    ["/token", "OPTIONS", "POST"],
    ["/sign", "GET", "POST"],
    ["/sign", "PATCH", "POST"],
    ["/releases", "POST", "GET"],
    ["/releases", "OPTIONS", "GET"],
    ["/webhook", "GET", "POST"],
    ["/webhook", "PUT", "POST"],
  ])("%s %s → 405 method_not_allowed with Allow: %s", async (path, method, allow) => {
    const res = await call(method, path);
    expect(res.status).toBe(405);
    expect(res.allow).toBe(allow);
    expect(res.body).toEqual({ error: "method_not_allowed" });
  });

  it.each(["/token", "/releases"])("HEAD %s → 405 with Allow", async (path) => {
    const res = await fetch(`${broker.url}${path}`, { method: "HEAD" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe(path === "/token" ? "POST" : "GET");
  });

  it("answers POST /token with the API's errors when no setting is set at all", async () => {
    const res = await fetch(`${broker.url}/token`, { method: "POST", body: JSON.stringify({ oidcToken: "a.b.c", owner: "o", repo: "r" }) });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: "invalid_oidc_token", reason: "malformed_token" });
  });

  it.each(["BREW", "GET /token HTTP/1.1"])("answers 400 invalid_request in JSON to a request Node's parser rejects (%j)", async (method) => {
    const { port } = new URL(broker.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => socket.write(`${method} /token HTTP/1.1\r\nHost: x\r\n\r\n`));
      let text = "";
      socket.on("data", (chunk) => (text += String(chunk)));
      socket.on("close", () => resolve(text));
      socket.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/content-type: application\/json/i);
    expect(answer.split("\r\n\r\n")[1]).toBe('{"error":"invalid_request"}');
  });

  // POST /token runs its handler chain without Express (server/http/direct-route.ts); a request
  // target with a query string still goes through Express's router to the same chain.
  it.each([
    ["malformed JSON", "{", {}],
    ["a JSON array", "[]", {}],
    ["missing fields", "{}", {}],
    ["a malformed OIDC token", JSON.stringify({ oidcToken: "a.b.c", owner: "o", repo: "r" }), {}],
    ["a compressed body", "{}", { "content-encoding": "gzip" }],
    ["a body over 64 KiB", JSON.stringify({ oidcToken: "x".repeat(70_000) }), {}],
  ])("answers POST /token with %s the same directly and through Express", async (_name, body, headers) => {
    const answers = [];
    for (const path of ["/token", "/token?via=express"]) {
      const before = broker.logs.length;
      const res = await fetch(`${broker.url}${path}`, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
      const text = await res.text();
      const line = broker.logs.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "request");
      expect(res.headers.get("x-request-id")).toBe(line?.request_id);
      answers.push({
        status: res.status,
        body: text,
        type: res.headers.get("content-type"),
        length: res.headers.get("content-length"),
        connection: res.headers.get("connection"),
        log: { method: line?.method, route: line?.route, status: line?.status, code: line?.code },
      });
    }
    expect(answers[0]!.status).toBeGreaterThanOrEqual(400);
    expect(answers[0]!.log.route).toBe("/token");
    expect(answers[1]).toEqual(answers[0]);
  });

  it("answers an unexpected failure on POST /token with a bare 500 internal_error, directly and through Express", async () => {
    // An environment whose read throws: a failure no BrokerError describes.
    const env = new Proxy({} as Record<string, string | undefined>, {
      get: (_target, name) => {
        if (name === "TOKEN_PERMISSIONS") throw new TypeError("environment unreadable: internal detail");
        return undefined;
      },
    });
    const failing = await startBroker(env);
    try {
      for (const path of ["/token", "/token?via=express"]) {
        const before = failing.logs.length;
        const res = await fetch(`${failing.url}${path}`, { method: "POST", body: JSON.stringify({ oidcToken: "a.b.c", owner: "o", repo: "r" }) });
        expect(res.status).toBe(500);
        expect(await res.text()).toBe('{"error":"internal_error"}');
        const lines = failing.logs.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>);
        const requestId = res.headers.get("x-request-id");
        expect(lines.find((l) => l.msg === "unhandled error")).toMatchObject({ route: "/token", request_id: requestId });
        expect(lines.find((l) => l.msg === "request")).toMatchObject({ route: "/token", status: 500, code: "internal_error", request_id: requestId });
      }
      expect((await fetch(`${failing.url}/nope`)).status).toBe(404);
    } finally {
      await failing.close();
    }
  });

  it("discloses no framework header", async () => {
    const res = await fetch(`${broker.url}/nope`);
    expect(res.headers.get("x-powered-by")).toBeNull();
  });
});
