import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { fetchBrokerReleases, type BrokerSource } from "./fetch-broker-releases.js";
import { loadStaticFiles, type StaticFile } from "./static-files.js";

export interface DashboardDeps extends BrokerSource {
  /** Whether a `Host` header is answered; undefined answers any (bound beyond loopback). */
  answersHost?: (host: string | undefined) => boolean;
  staticFiles?: Map<string, StaticFile>;
}

/** Every response: nothing from elsewhere, nothing inline, no framing, no referrer. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** The dashboard: GET / (the page), /app.js, /app.css, and /api/releases (the broker's answer, fetched server-side). */
export function createDashboard(deps: DashboardDeps): { listener: RequestListener } {
  const files = deps.staticFiles ?? loadStaticFiles();

  const listener: RequestListener = (request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) send(response, 500, { error: "internal_error", sentence: "The dashboard failed unexpectedly; its terminal may say why." });
      else response.destroy();
    });
  };

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // A page elsewhere that rebinds its name to 127.0.0.1 would otherwise read the aggregate.
    if (deps.answersHost && !deps.answersHost(request.headers.host)) {
      send(response, 421, { error: "misdirected_request", sentence: "This dashboard only answers to the address it listens on." });
      return;
    }
    const path = new URL(request.url ?? "/", "http://dashboard.invalid").pathname;
    const known = path === "/api/releases" || files.has(path);
    if (!known) {
      send(response, 404, { error: "not_found", sentence: "The dashboard has no such page." });
      return;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      send(response, 405, { error: "method_not_allowed", sentence: "The dashboard only answers GET." }, { allow: "GET, HEAD" });
      return;
    }
    if (path === "/api/releases") {
      // Browsers say where a request comes from; only the page itself may read the aggregate.
      const site = request.headers["sec-fetch-site"];
      if (site !== undefined && site !== "same-origin" && site !== "none") {
        send(response, 403, { error: "cross_site_request", sentence: "Only the dashboard's own page may read the releases." });
        return;
      }
      const answer = await fetchBrokerReleases(deps);
      send(response, answer.status, answer.body, {}, request.method === "HEAD");
      return;
    }
    const file = files.get(path)!;
    response.writeHead(200, { ...SECURITY_HEADERS, "content-type": file.contentType, "content-length": file.body.length, "cache-control": "no-cache" });
    response.end(request.method === "HEAD" ? undefined : file.body);
  }

  return { listener };
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}, headOnly = false): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    ...headers,
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  response.end(headOnly ? undefined : text);
}
