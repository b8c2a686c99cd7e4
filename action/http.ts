// The action's one HTTP client, on node:http / node:https. Every request ends within its timeout,
// the connection included: one deadline from the moment the request is made, and the socket is
// destroyed (not half-closed) when it passes, so nothing is left holding the event loop. No
// keep-alive: each request has its own agent, closed with it.
//
// Proxies: https_proxy / http_proxy / no_proxy are read with @actions/http-client's own rules
// (getProxyUrl), and a proxied request goes through the tunnelling agent that HttpClient builds,
// so self-hosted runners behind a proxy keep working.
import * as http from "node:http";
import * as https from "node:https";
import { HttpClient, getProxyUrl } from "@actions/http-client";
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

function agentFor(url: URL): Agent {
  if (getProxyUrl(url.href) !== "") {
    // A fresh client each time: HttpClient caches one agent per client whatever the protocol.
    return new HttpClient(USER_AGENT, [], { keepAlive: false }).getAgent(url.href) as Agent;
  }
  return url.protocol === "https:" ? new https.Agent({ keepAlive: false }) : new http.Agent({ keepAlive: false });
}

function send(method: string, url: URL, body: string | null, headers: Record<string, string>, timeoutMs: number): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    const agent = agentFor(url);
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
        reject(response ? new IncompleteAnswer(response.statusCode ?? 0, error) : error);
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
