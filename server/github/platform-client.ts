import { RequestError } from "@octokit/request-error";
import { API_VERSION, deadlineError, fetchText } from "./platform-request.js";
import { streamedJson, type JsonRead, type Shape, type StreamListener } from "./streamed-json.js";
import type { UpstreamGate } from "./upstream-gate.js";

export interface PlatformCall {
  method: "GET" | "POST" | "DELETE";
  /** Path under the API base, already encoded. */
  path: string;
  /**
   * The platform's own URL outside the REST base, instead of `path`: its GraphQL endpoint
   * (`PlatformSettings.graphqlUrl`, from the settings, never from an answer).
   */
  url?: string;
  /** App JWT or installation token. */
  bearer: string;
  body?: unknown;
  /**
   * Epoch ms by which the answer must be in (the request's deadline), a wait for points included:
   * the fetch's timeout is min(timeoutMs, time left), and with no time left nothing is sent.
   * Running out fails like a timeout (a RequestError without response).
   */
  deadlineAt?: number;
  /**
   * Aborts the call wherever it is, a wait for points included. The broker's own calls need none:
   * `deadlineAt` bounds them.
   */
  signal?: AbortSignal;
  /**
   * A success that carries a long array under `key` of its top-level object (GitHub's repository
   * objects): read as it arrives, each element parsed on its own (streamed-json.ts). `data` is
   * what JSON.parse of the whole body gives, each element of that array cut down to `keep`.
   */
  streamArray?: { key: string; keep?: Shape; listener?: StreamListener };
  /** A conditional GET (the policy reader): a 304 answer comes back as a success with no data. */
  ifNoneMatch?: string;
  /** A success's headers as soon as they are in, before its body is read (a listing's Link). */
  onHeaders?: (headers: { get(name: string): string | null }) => void;
}

export interface PlatformAnswer {
  status: number;
  headers: Record<string, string>;
  data: unknown;
}

export type PlatformClient = (call: PlatformCall) => Promise<PlatformAnswer>;

/**
 * A lean REST client for the calls on the /token hot path (installation lookup, mint): one fetch,
 * one JSON.parse, nothing else. Octokit's request path (endpoint merging, a BigInt-safe JSON
 * parser) cost as much per exchange as the rest of the broker's own work. Failures are thrown as
 * Octokit's RequestError — status, response headers, credentials redacted — so retries and error
 * mapping treat every platform call alike; a network error or timeout has no response, as in Octokit.
 */
export function createPlatformClient(options: { apiBase: string; fetch: typeof fetch; timeoutMs: number; now?: () => number; gate?: UpstreamGate }): PlatformClient {
  const now = options.now ?? Date.now;
  return async ({ method, path, url: absolute, bearer, body, deadlineAt, signal, streamArray, onHeaders, ifNoneMatch }) => {
    const url = absolute ?? `${options.apiBase}${path}`;
    const request = { method, url, headers: {} };
    const headers: Record<string, string> = {
      accept: "application/vnd.github+json",
      // Compressed: a 5,000-repository crawl's answers are 28.2 MB as JSON, under 1 MB gzip (issue 28).
      "accept-encoding": "gzip",
      authorization: `Bearer ${bearer}`,
      "user-agent": "tokensmith",
      "x-github-api-version": API_VERSION,
    };
    if (body !== undefined) headers["content-type"] = "application/json; charset=utf-8";
    if (ifNoneMatch !== undefined) headers["if-none-match"] = ifNoneMatch;
    if (deadlineAt !== undefined && deadlineAt - now() <= 0) throw deadlineError(`${method} ${absolute ?? path}`);
    let response: Response;
    let text: string;
    let json: JsonRead | undefined;
    try {
      const init: RequestInit = { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: "error", signal };
      const stream = streamArray === undefined ? undefined : () => streamedJson(streamArray.key, streamArray.keep, streamArray.listener);
      ({ response, text, json } = await fetchText(options.fetch, options.timeoutMs, url, init, options.gate, { deadlineAt, now, stream, onHeaders }));
    } catch (error) {
      throw new RequestError(error instanceof Error ? error.message : "request failed", 500, { request, cause: error });
    }
    let data: unknown = text;
    if (json?.json) data = json.value;
    else {
      try {
        data = text === "" ? undefined : JSON.parse(text);
      } catch {
        // Not JSON: the caller sees the text and judges the shape.
      }
    }
    if (response.status >= 400) {
      const message = (data as { message?: unknown } | undefined)?.message;
      throw new RequestError(typeof message === "string" ? message : `HTTP ${response.status}`, response.status, {
        request,
        response: { status: response.status, url, headers: copyHeaders(response.headers), data },
      });
    }
    // A mint's token spends its installation's points when the broker uses it (call-principal.ts).
    const minted = method === "POST" && response.status === 201 && absolute === undefined ? MINT_PATH.exec(path) : null;
    if (minted) options.gate?.principals.noteMint(minted[1]!, data, options.gate.principals.principalOf(headers.authorization));
    return new Answer(response.status, response.headers, data);
  };
}

const MINT_PATH = /^\/app\/installations\/(\d+)\/access_tokens$/;

/** A success; its headers are copied only if a caller reads them (the hot path does not). */
class Answer implements PlatformAnswer {
  #raw: Headers;
  #copy: Record<string, string> | undefined;
  constructor(
    readonly status: number,
    raw: Headers,
    readonly data: unknown,
  ) {
    this.#raw = raw;
  }
  get headers(): Record<string, string> {
    return (this.#copy ??= copyHeaders(this.#raw));
  }
}

function copyHeaders(headers: Headers): Record<string, string> {
  const copy: Record<string, string> = {};
  headers.forEach((value, name) => {
    copy[name] = value;
  });
  return copy;
}
