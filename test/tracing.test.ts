// OpenTelemetry traces (issue 40, item 6): off by default; on, a server span per request and a
// client span per upstream call, children of the request's span. In process with the SDK's
// InMemorySpanExporter, and on the built broker as a child process exporting over OTLP (HTTP,
// JSON) to a receiver the test runs.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { startTracing, stopTracing, tracingWanted } from "../server/tracing.js";
import { startBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker } from "./support/spawn-broker.js";

let fx: TokenFixture;
const secrets: string[] = [];
beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await fx.sim.close();
});

async function mint(url: string): Promise<number> {
  const oidcToken = await fx.sim.oidc.sign({});
  secrets.push(oidcToken);
  const response = await fetch(`${url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ owner: "octo-org", repo: "app", oidcToken }) });
  const body = (await response.json()) as { token?: string };
  if (body.token) secrets.push(body.token);
  return response.status;
}

describe("OpenTelemetry traces", () => {
  it("are off unless the OTel environment asks: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint; none or OTEL_SDK_DISABLED wins", () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: "otlp" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" })).toBe(false);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: "otlp", OTEL_SDK_DISABLED: "true" })).toBe(false);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: "console" })).toBe(false);
  });

  it("in process (InMemorySpanExporter): POST /token is a server span; its platform calls are client spans inside it", async () => {
    const exporter = new InMemorySpanExporter();
    expect(await startTracing({}, exporter)).toBe(true);
    const broker = await startBroker({ ...fx.env });
    let spans: ReturnType<InMemorySpanExporter["getFinishedSpans"]>;
    try {
      expect(await mint(broker.url)).toBe(200);
      await broker.close(); // every span ended
      spans = [...exporter.getFinishedSpans()]; // (the exporter forgets them when tracing stops)
    } finally {
      await broker.close().catch(() => undefined);
      await stopTracing();
    }
    const server = spans.find((s) => s.name === "POST /token")!;
    expect(server).toBeDefined();
    expect(server.kind).toBe(1); // SpanKind.SERVER
    expect(server.attributes).toMatchObject({ "http.request.method": "POST", "http.route": "/token", "http.response.status_code": 200 });
    const children = spans.filter((s) => s.parentSpanContext?.spanId === server.spanContext().spanId);
    const names = children.map((s) => s.name);
    expect(names).toContain("POST mint");
    expect(names.some((n) => n === "GET installation_lookup")).toBe(true);
    for (const child of children) {
      expect(child.kind).toBe(2); // SpanKind.CLIENT
      expect(child.spanContext().traceId).toBe(server.spanContext().traceId);
      expect(child.attributes["http.response.status_code"]).toBeGreaterThanOrEqual(200);
      // Never a path, a query or a header: the call's kind, method and host only.
      expect(Object.keys(child.attributes).sort()).toEqual(["http.request.method", "http.response.status_code", "server.address", "tokensmith.call"]);
    }
    expect(server.resource.attributes["service.name"]).toBe("tokensmith");
  });

  it("a broker process with OTEL_EXPORTER_OTLP_ENDPOINT exports its spans over OTLP/HTTP; without it, it sends none", async () => {
    const received: Array<{ path: string; type: string | undefined; body: string }> = [];
    const collector: Server = await new Promise((resolve) => {
      const listening = createServer((req, res) => {
        let body = "";
        req.on("data", (chunk: Buffer) => (body += chunk.toString()));
        req.on("end", () => {
          received.push({ path: req.url ?? "", type: req.headers["content-type"], body });
          res.writeHead(200, { "content-type": "application/json" }).end("{}");
        });
      }).listen(0, "127.0.0.1", () => resolve(listening));
    });
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    try {
      const quiet = await spawnBroker({ ...fx.env });
      expect(await mint(quiet.url)).toBe(200);
      expect(await quiet.stop("SIGTERM")).toBe(0);
      expect(quiet.lines.some((l) => l.includes("OpenTelemetry"))).toBe(false);
      expect(received).toHaveLength(0);

      const traced = await spawnBroker({ ...fx.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: "tokensmith-test" });
      expect(await mint(traced.url)).toBe(200);
      // SIGTERM flushes the batch before exit.
      expect(await traced.stop("SIGTERM")).toBe(0);
      expect(traced.lines.some((l) => l.includes("OpenTelemetry traces exported over OTLP"))).toBe(true);
      expectNoSecrets([...quiet.lines, ...traced.lines, ...received.map((r) => r.body)], [...secrets, fx.app.privateKeyPem]);
    } finally {
      collector.close();
    }
    expect(received.length).toBeGreaterThan(0);
    expect(received.every((r) => r.path === "/v1/traces" && r.type?.startsWith("application/json"))).toBe(true);
    const spans = received.flatMap((r) => {
      const body = JSON.parse(r.body) as { resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }; scopeSpans: Array<{ spans: Array<{ name: string; traceId: string; spanId: string; parentSpanId?: string }> }> }> };
      return body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((span) => ({ ...span, service: rs.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue }))));
    });
    const server = spans.find((s) => s.name === "POST /token")!;
    expect(server).toMatchObject({ service: "tokensmith-test" });
    const mintSpan = spans.find((s) => s.name === "POST mint")!;
    expect(mintSpan).toMatchObject({ traceId: server.traceId, parentSpanId: server.spanId });
  });
});
