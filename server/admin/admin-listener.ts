import type { RequestListener, ServerResponse } from "node:http";
import type { Metrics } from "../metrics.js";
import type { Readiness } from "./readiness.js";
import { isDegradation, type NotReadyReason } from "./readiness-checks.js";

/**
 * The admin listener's three routes, on a port of their own (the API allows no other path on the
 * broker's origin):
 *   GET /healthz  200 while the process runs (liveness)
 *   GET /readyz   200 when ready; 503 while starting or draining, or with `reasons` when the
 *                 broker listens but cannot mint (load-balancer and orchestrator readiness check);
 *                 200 with `degraded` when it mints without a store
 *   GET /metrics  Prometheus text exposition
 * Anything else 404, another method 405. No body is read, nothing secret is served.
 */
export function adminListener(options: { metrics: Metrics; readiness: Readiness; checks?: () => Promise<NotReadyReason[]> }): RequestListener {
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/healthz" && path !== "/readyz" && path !== "/metrics") return send(res, 404, { error: "not_found" });
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD");
      return send(res, 405, { error: "method_not_allowed" });
    }
    if (path === "/healthz") return send(res, 200, { status: "ok" });
    if (path === "/readyz") {
      const state = options.readiness.state;
      if (state !== "ready" || !options.checks) return send(res, state === "ready" ? 200 : 503, { status: state });
      options.checks().then(
        (reasons) => {
          if (reasons.some((reason) => !isDegradation(reason))) return send(res, 503, { status: "not_ready", reasons });
          send(res, 200, reasons.length === 0 ? { status: "ready" } : { status: "ready", degraded: reasons });
        },
        () => send(res, 503, { status: "not_ready", reasons: [{ reason: "check_failed" }] }),
      );
      return;
    }
    options.metrics.exposition().then(
      ({ contentType, text }) => {
        res.writeHead(200, { "content-type": contentType, "cache-control": "no-store" });
        res.end(text);
      },
      () => send(res, 500, { error: "metrics_unavailable" }),
    );
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
  res.end(text);
}
