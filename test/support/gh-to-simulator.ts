// Lets the real GitHub CLI (`gh`, Debian's package) talk to the simulator. gh speaks plain http to
// one host only, `github.localhost` (its API at http://api.github.localhost/, GraphQL at
// http://api.github.localhost/graphql; GH_TOKEN is its token there, as on github.com), so a step's
// gh gets GH_HOST=github.localhost and HTTP_PROXY pointing at this loopback proxy, which forwards
// api.github.localhost to the simulator's API and refuses everything else: a CONNECT (any https
// host), and any other host (git's http transport to a checkout's `origin` lands here and fails).
import http from "node:http";
import type { AddressInfo } from "node:net";

export const GH_HOST = "github.localhost";
const API_HOST = `api.${GH_HOST}`;

export interface GhProxy {
  /** The variables a step's gh needs to reach the simulator (and nothing else). */
  env: Record<string, string>;
  /** Every request forwarded, as `METHOD /path`. */
  requests: string[];
  close(): Promise<void>;
}

export async function startGhProxy(apiBase: string): Promise<GhProxy> {
  const base = apiBase.replace(/\/$/, "");
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? ""}`);
    if (url.hostname !== API_HOST) {
      res.writeHead(502, { "content-type": "text/plain" }).end(`gh-to-simulator: only ${API_HOST} is forwarded, not ${url.hostname}\n`);
      return;
    }
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    const target = new URL(`${base}${url.pathname}${url.search}`);
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: `${target.pathname}${target.search}`, headers: { ...req.headers, host: target.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", (error) => res.writeHead(502).end(`gh-to-simulator: ${error.message}\n`));
    req.pipe(upstream);
  });
  server.on("connect", (_req, socket) => socket.end("HTTP/1.1 403 Forbidden\r\n\r\n"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxy = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    env: {
      GH_HOST,
      HTTP_PROXY: proxy,
      HTTPS_PROXY: proxy,
      http_proxy: proxy,
      https_proxy: proxy,
      NO_PROXY: "",
      no_proxy: "",
      GH_NO_UPDATE_NOTIFIER: "1",
      GH_PROMPT_DISABLED: "1",
      NO_COLOR: "1",
    },
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
