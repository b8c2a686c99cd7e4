import type { Context, Span, Tracer } from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { buildVersion } from "./build-version.js";

// OpenTelemetry traces, off by default (docs/operations.md#traces): a server span per request and
// a client span per upstream call (platform and issuers), exported over OTLP (HTTP, JSON) when the
// OTel environment asks for it. The SDK is imported only then: a broker without tracing loads none
// of it, and each hook below is one check of an undefined variable.

type Api = typeof import("@opentelemetry/api");

let api: Api | undefined;
let tracer: Tracer | undefined;
let stop: (() => Promise<void>) | undefined;

/**
 * Whether the OTel environment asks for traces: `OTEL_TRACES_EXPORTER=otlp`, or an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`) with no
 * `OTEL_TRACES_EXPORTER` saying otherwise; never with `OTEL_SDK_DISABLED=true`.
 */
export function tracingWanted(env: Record<string, string | undefined>): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "").split(",").map((name) => name.trim().toLowerCase()).filter(Boolean);
  if (exporters.length > 0) return exporters.includes("otlp");
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/**
 * Starts tracing when `env` asks for it (or `exporter` is given: tests pass the SDK's
 * InMemorySpanExporter). The OTLP exporter reads its endpoint, headers and timeout from the
 * standard OTEL_EXPORTER_OTLP_* variables; spans are batched (OTEL_BSP_*). Returns whether it runs.
 */
export async function startTracing(env: Record<string, string | undefined>, exporter?: SpanExporter): Promise<boolean> {
  if (tracer) return true;
  if (!exporter && !tracingWanted(env)) return false;
  const [otel, node, base, resources] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/resources"),
  ]);
  const spanExporter = exporter ?? new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter();
  const provider = new node.NodeTracerProvider({
    resource: resources.resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME?.trim() || "tokensmith", "service.version": buildVersion() }),
    // A test's exporter sees each span as it ends; OTLP gets them in batches.
    spanProcessors: [exporter ? new base.SimpleSpanProcessor(spanExporter) : new base.BatchSpanProcessor(spanExporter)],
  });
  provider.register();
  api = otel;
  tracer = otel.trace.getTracer("tokensmith", buildVersion());
  stop = async () => {
    await provider.shutdown();
    otel.trace.disable();
    otel.context.disable();
  };
  return true;
}

/** Flushes and stops tracing (at shutdown; a test between runs). */
export async function stopTracing(): Promise<void> {
  const stopping = stop;
  api = undefined;
  tracer = undefined;
  stop = undefined;
  await stopping?.();
}

/** A request's server span, and how to run its handlers inside it (so upstream calls are its children). */
export interface RequestSpan {
  run<T>(work: () => T): T;
  end(status: number, code: string | undefined): void;
}

/** Starts a request's server span (`POST /token`), or undefined when tracing is off. */
export function startRequestSpan(method: string, route: string, requestId: string): RequestSpan | undefined {
  if (!tracer || !api) return undefined;
  const otel = api;
  const span = tracer.startSpan(`${method} ${route}`, {
    kind: otel.SpanKind.SERVER,
    attributes: { "http.request.method": method, "http.route": route, "tokensmith.request_id": requestId },
  });
  const context: Context = otel.trace.setSpan(otel.context.active(), span);
  return {
    run: (work) => otel.context.with(context, work),
    end(status, code) {
      span.setAttribute("http.response.status_code", status);
      if (code) span.setAttribute("tokensmith.error_code", code);
      if (status >= 500) span.setStatus({ code: otel.SpanStatusCode.ERROR });
      span.end();
    },
  };
}

/**
 * Runs one upstream call in a client span named by its bounded kind (`mint`, `policy_read`, …:
 * server/admin/observe-fetch.ts), with its method, host and status; never its path, query or headers.
 */
export async function inUpstreamSpan(call: string, method: string, url: URL, work: (span: Span | undefined) => Promise<Response>): Promise<Response> {
  if (!tracer || !api) return work(undefined);
  const otel = api;
  return tracer.startActiveSpan(
    `${method} ${call}`,
    { kind: otel.SpanKind.CLIENT, attributes: { "http.request.method": method, "server.address": url.hostname, "tokensmith.call": call } },
    async (span) => {
      try {
        const response = await work(span);
        span.setAttribute("http.response.status_code", response.status);
        if (response.status >= 500) span.setStatus({ code: otel.SpanStatusCode.ERROR });
        return response;
      } catch (error) {
        span.setStatus({ code: otel.SpanStatusCode.ERROR, message: error instanceof Error ? error.name : "error" });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
