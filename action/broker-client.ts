// One POST /token to one broker address, and what its answer means to the action (docs/api.md#post-token):
// a 200 (its body still unchecked: check-answer.ts), a 200 whose body never arrived whole, a
// verdict (a JSON body whose `error` is one of the broker's codes), an unreachable broker (network
// error, timeout before any status line, or a 5xx that is not a verdict, e.g. a proxy's 502 page),
// an answer no tokensmith broker gives (a 4xx without a verdict), a redirect (a 3xx, whatever its
// body: a broker never redirects, so broker-url is not the broker's final address), or a proxy that
// would not open the way (http.ts's ProxyFailure: the broker was never asked). A verdict carries the
// broker's `Retry-After` (in ms) when it sent one. A 200 of any shape means a token may have been
// minted: it is never "unreachable", so it is never followed by another POST.
import { isErrorCode } from "../shared/error-codes.js";
import type { TokenRequest } from "../shared/types.js";
import type { Verdict } from "./hints.js";
import { IncompleteAnswer, networkDetail, ProxyFailure } from "./http.js";
import type { Http } from "./toolkit.js";

export type BrokerOutcome =
  /** `body` is the parsed JSON, undefined when the body is not JSON. */
  | { kind: "answered"; body: unknown }
  | { kind: "answer-incomplete"; detail: string }
  | { kind: "verdict"; verdict: Verdict; retryAfterMs?: number }
  | { kind: "unreachable"; detail: string }
  | { kind: "unexpected"; detail: string }
  /** `location`: the Location header resolved against the request's URL, when it is one. */
  | { kind: "redirect"; status: number; location?: URL }
  | { kind: "proxy"; failure: ProxyFailure };

export async function postToken(http: Http, brokerUrl: string, body: TokenRequest, limits?: { timeoutMs?: number }): Promise<BrokerOutcome> {
  let status: number;
  let text: string;
  let retryAfter: string | string[] | undefined;
  let location: string | undefined;
  try {
    const response = await http.request(
      "POST",
      `${brokerUrl}/token`,
      JSON.stringify(body),
      { "content-type": "application/json", accept: "application/json" },
      limits,
    );
    status = response.status;
    text = response.body;
    retryAfter = response.headers["retry-after"];
    location = response.headers.location;
  } catch (error) {
    if (error instanceof ProxyFailure) return { kind: "proxy", failure: error };
    if (error instanceof IncompleteAnswer) {
      if (error.status === 200) return { kind: "answer-incomplete", detail: error.problem.message };
      if (error.status >= 500) return { kind: "unreachable", detail: error.message };
      return { kind: "unexpected", detail: error.message };
    }
    return { kind: "unreachable", detail: networkDetail(error) };
  }

  if (status >= 300 && status < 400) {
    const target = resolved(location, `${brokerUrl}/token`);
    return { kind: "redirect", status, ...(target ? { location: target } : {}) };
  }
  const json = parseJson(text);
  if (status === 200) return { kind: "answered", body: json };
  if (isErrorBody(json)) {
    const wait = retryAfterMs(retryAfter);
    const verdict: Verdict = {
      status,
      error: json.error,
      ...(typeof json.reason === "string" ? { reason: json.reason } : {}),
      ...(typeof json.detail === "string" ? { detail: json.detail } : {}),
    };
    return { kind: "verdict", verdict, ...(wait !== undefined ? { retryAfterMs: wait } : {}) };
  }
  if (status >= 500 || status === 0) return { kind: "unreachable", detail: `HTTP ${status} that is not a broker answer` };
  return { kind: "unexpected", detail: `HTTP ${status} that is not a broker answer` };
}

function resolved(location: string | undefined, base: string): URL | undefined {
  if (location === undefined) return undefined;
  try {
    return new URL(location, base);
  } catch {
    return undefined;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isErrorBody(json: unknown): json is { error: Verdict["error"]; reason?: unknown; detail?: unknown } {
  return typeof json === "object" && json !== null && isErrorCode((json as { error?: unknown }).error);
}

/**
 * A `Retry-After` header in milliseconds: delta-seconds or an HTTP-date (RFC 9110 10.2.3);
 * undefined when absent or not one of those.
 */
export function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const text = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isFinite(date) && /[a-z]/i.test(text) ? Math.max(0, date - Date.now()) : undefined;
}

