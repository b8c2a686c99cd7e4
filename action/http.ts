// The action's one HTTP client, on node:http / node:https. Every request ends within its timeout,
// the connection included: one deadline from the moment the request is made, and the socket is
// destroyed (not half-closed) when it passes, so nothing is left holding the event loop. No
// keep-alive: each request has its own agent, closed with it.
//
// Proxies: https_proxy / http_proxy / no_proxy are read with @actions/http-client's own rules
// (getProxyUrl), and a proxied request goes through the tunnelling agent that HttpClient builds,
// so self-hosted runners behind a proxy keep working. A failure of the proxy itself (its CONNECT
// answered 407 or 403, its TLS name wrong, nothing listening at it) is a ProxyFailure naming the
// proxy and its variable: the broker was never asked, and broker-url is not what to fix.
import * as http from "node:http";
import * as https from "node:https";
import { HttpClient, getProxyUrl } from "@actions/http-client";
import { redactUrl } from "../shared/redact-url.js";
import type { Http, HttpAnswer } from "./toolkit.js";

/** Bodies the action reads are a few hundred bytes: anything past this is not an answer for us. */
export const MAX_BODY_BYTES = 64 * 1024;
const USER_AGENT = "tokensmith-action";

export class HttpTimeout extends Error {
  readonly code = "ETIMEDOUT";
  constructor(timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = "HttpTimeout";
  }
}

/**
 * The status line arrived, then the answer failed (cut off, over MAX_BODY_BYTES, or its body
 * outlived the timeout). Kept apart from "no answer": after a 200 status line a token may have been
 * minted, so the action must not ask again (broker-client.ts).
 */
export class IncompleteAnswer extends Error {
  constructor(
    readonly status: number,
    readonly problem: Error,
  ) {
    super(`HTTP ${status} answer incomplete: ${problem.message}`);
    this.name = "IncompleteAnswer";
  }
}

/** The tunnel to the destination could not be opened: the proxy refused or failed. */
export class ProxyFailure extends Error {
  constructor(
    /** The proxy's address, redacted (a proxy URL often carries credentials). */
    readonly proxy: string,
    /** The variable it came from: https_proxy, HTTPS_PROXY, http_proxy or HTTP_PROXY. */
    readonly variable: string,
    readonly detail: string,
  ) {
    super(`the proxy ${proxy} (${variable}) ${detail}`);
    this.name = "ProxyFailure";
  }
}

/** The error's code (ECONNREFUSED, ENOTFOUND, ...) or message: never a header, never a body. */
export function networkDetail(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message;
}

/**
 * No redirects (a token request must reach the address the user named) and no built-in retries.
 * A request's own `timeoutMs` (the time left in the step's bound) shortens the client's.
 */
export function createHttp(options: { timeoutMs: number }): Http {
  return {
    request: (method, url, body, headers, limits) =>
      send(method, new URL(url), body, headers, Math.max(1, Math.min(options.timeoutMs, limits?.timeoutMs ?? Infinity))),
  };
}

/** A Node agent, or the tunnelling agent HttpClient builds for a proxy (which has no destroy()). */
type Agent = http.Agent & { destroy?: () => void };

/** A proxied request's proxy, and what went wrong opening the tunnel through it, once known. */
interface ProxyUse {
  shown: string;
  variable: string;
  failure?: string;
}

function agentFor(url: URL): { agent: Agent; proxy?: ProxyUse } {
  const proxyUrl = getProxyUrl(url.href);
  if (proxyUrl !== "") {
    // A fresh client each time: HttpClient caches one agent per client whatever the protocol.
    const agent = new HttpClient(USER_AGENT, [], { keepAlive: false }).getAgent(url.href) as Agent;
    const proxy: ProxyUse = { shown: redactUrl(proxyUrl), variable: proxyVariable(url) };
    watchTunnel(agent, proxy);
    return { agent, proxy };
  }
  return { agent: url.protocol === "https:" ? new https.Agent({ keepAlive: false }) : new http.Agent({ keepAlive: false }) };
}

/** The variable getProxyUrl took the proxy from (it prefers the lowercase one). */
function proxyVariable(url: URL): string {
  const lower = url.protocol === "https:" ? "https_proxy" : "http_proxy";
  return process.env[lower] ? lower : lower.toUpperCase();
}

/**
 * The tunnelling agent (the `tunnel` package HttpClient uses) opens each tunnel with its own
 * `request` (a CONNECT to the proxy) and reports a failure to the request only as an Error with
 * the text of the cause. Wrapping that `request` sees the CONNECT itself: its status, or its error
 * (a TLS name mismatch at an https proxy, a refused connection), before the agent reports it.
 */
function watchTunnel(agent: Agent, proxy: ProxyUse): void {
  const tunnel = agent as unknown as { request?: (options: unknown) => http.ClientRequest };
  const open = tunnel.request;
  if (typeof open !== "function") return;
  tunnel.request = (options) => {
    const connect = open(options);
    connect.once("connect", (res: http.IncomingMessage) => {
      if (res.statusCode !== 200) proxy.failure = `answered the CONNECT with HTTP ${res.statusCode}${res.statusCode === 407 ? " (Proxy Authentication Required)" : ""}`;
    });
    connect.once("error", (error) => {
      proxy.failure = `could not be used (${networkDetail(error)})`;
    });
    return connect;
  };
}

function send(method: string, url: URL, body: string | null, headers: Record<string, string>, timeoutMs: number): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    const { agent, proxy } = agentFor(url);
    const module = url.protocol === "https:" ? https : http;
    let settled = false;
    let response: http.IncomingMessage | undefined;
    const req = module.request(url, {
      method,
      agent,
      headers: {
        ...headers,
        "user-agent": USER_AGENT,
        connection: "close",
        ...(body !== null ? { "content-length": String(Buffer.byteLength(body, "utf8")) } : {}),
      },
    });
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      outcome();
      agent.destroy?.();
    };
    const fail = (error: Error) =>
      settle(() => {
        response?.destroy();
        req.destroy();
        if (response) reject(new IncompleteAnswer(response.statusCode ?? 0, error));
        else reject(proxy?.failure !== undefined ? new ProxyFailure(proxy.shown, proxy.variable, proxy.failure) : error);
      });
    // Armed before the socket exists: a connect that never completes is bounded too.
    const deadline = setTimeout(() => fail(new HttpTimeout(timeoutMs)), timeoutMs);
    req.on("error", fail);
    req.on("response", (res) => {
      response = res;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BODY_BYTES) fail(new Error(`answer larger than ${MAX_BODY_BYTES} bytes`));
        else chunks.push(chunk);
      });
      res.on("error", fail);
      res.on("aborted", () => fail(new Error("connection closed before the answer was complete")));
      res.on("end", () => settle(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") })));
    });
    req.end(body ?? undefined);
  });
}
