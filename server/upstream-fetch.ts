import type { Readable } from "node:stream";
import { promisify } from "node:util";
import { createGunzip, gunzip as gunzipCallback, gunzipSync } from "node:zlib";
import { request, type Dispatcher } from "undici";
import { upstreamAgent } from "./upstream-connections.js";

// The broker's transport for every upstream call (platform, OIDC issuers): `fetch`'s shape, so
// every caller (the lean platform client, Octokit, the key-set source) and every wrapper (the
// gate and timeouts in platform-request.ts, the metrics in observe-fetch.ts, a test's loopback
// guard) stays as it is, but sent with undici's `request()` rather than the WHATWG fetch.
//
// Why: on the /token path the mint is the one upstream call, and fetch was the largest single
// cost of an exchange. WHATWG fetch builds a Request, a Headers list checked value by value, a
// Response with a ReadableStream body and an AbortSignal tied to the caller's, for a call whose
// answer is read whole as text. `request()` (the same library Node's fetch is built on) does the
// same HTTP/1.1 exchange on a keep-alive pool without those layers: less than half the CPU per
// call on this machine (`npm run bench -- token`, docs/development.md). Measured again for issue 28
// (kept: it wins by ≥ 10%), a fresh 1 × 5,000-repository crawl, gzip on, 40 ms-RTT 100 Mbit/s link,
// median of 5: broker CPU 460 ms (selected) / 480 ms (all) here, 680 / 730 ms with Node's fetch
// (undici's own fetch: 710–860 ms); wall time 1.04 / 1.15 s here, 1.14 / 1.27 s with Node's fetch.
//
// `instanceof Request` / `instanceof Headers` load Node's fetch in a new process (once, some 17 ms):
// checks that avoided that (web-classes.ts) made no measurable difference to the same crawl (1.70
// vs 1.68 s, 2.07 vs 2.33 s), so they are gone.
//
// Like fetch, it asks for gzip (`Accept-Encoding: gzip` unless the caller names an encoding) and
// decompresses a gzip answer (issue 28: a 5,000-repository crawl is 28.2 MB as JSON, under 1 MB
// gzip-compressed).
//
// What it does not do, on purpose: follow redirects (a 3xx comes back as an answer, which
// fetchText refuses: no upstream call follows one), send cookies, or cache. A request it cannot
// send as is (a Request object, a streamed body) goes to the global fetch instead.

/** The answer's headers, read-only, in the part of the Headers interface callers use. */
class AnswerHeaders {
  readonly #raw: Record<string, string | string[] | undefined>;
  constructor(raw: Record<string, string | string[] | undefined>) {
    this.#raw = raw;
  }
  get(name: string): string | null {
    const value = this.#raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  }
  has(name: string): boolean {
    return this.#raw[name.toLowerCase()] !== undefined;
  }
  forEach(callback: (value: string, name: string, parent: AnswerHeaders) => void): void {
    for (const [name, value] of this.entries()) callback(value, name, this);
  }
  *entries(): IterableIterator<[string, string]> {
    const names = Object.keys(this.#raw).sort();
    for (const name of names) {
      const value = this.get(name);
      if (value !== null) yield [name, value];
    }
  }
  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name;
  }
  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/** A body `request()` sends as is; false for one it cannot (a stream, form data, …). */
function sendableBody(body: RequestInit["body"]): string | Uint8Array | undefined | false {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  return false;
}

/**
 * Gunzip's output piece. A 5,000-repository answer (23.0 MB of JSON, 0.82 MB gzip) decompresses,
 * as it arrives, in 85 ms with zlib's 16 KiB default, 33 ms at 64 KiB, 19 ms at 256 KiB, 13 ms at
 * 1 MiB (median of 7, `node /tmp/h28-gunzip.mjs`, issue 28). 256 KiB: most of the gain, and fewer,
 * larger pieces for the readers (streamed-json.ts scans each one).
 */
const GUNZIP_CHUNK_BYTES = 256 * 1024;

/** Whether the answer's body came gzip-compressed (none does for HEAD, 204, 304: fetch's null-body statuses). */
function isGzipped(answer: Dispatcher.ResponseData, method: string): boolean {
  const encoding = answer.headers["content-encoding"];
  if (method === "HEAD" || answer.statusCode === 204 || answer.statusCode === 304) return false;
  return typeof encoding === "string" && /^\s*(x-)?gzip\s*$/i.test(encoding);
}

/** The body decompressed as it arrives, for a reader that takes it chunk by chunk. */
function gunzipStream(body: Readable): Readable {
  const gunzip = createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES });
  // A transport failure or an abort mid-body fails the decoded stream with the same error.
  body.on("error", (error) => gunzip.destroy(error));
  body.pipe(gunzip);
  return gunzip;
}

const gunzipAsync = promisify(gunzipCallback);

/**
 * A body read whole, then decompressed in one call: in this thread when small (most answers: a
 * mint's is 1.4 kB compressed, where a stream's set-up cost more than the work, issue 28: broker
 * CPU per /token 0.75 ms before gzip, 1.09 ms with a gunzip stream per answer; a 3.3 kB answer,
 * 210 B compressed: 0.016 ms per gunzipSync, 0.143 ms per gunzip stream, 5,000 of each in a loop), on libuv's
 * threads when large, so the event loop keeps serving. A cut or corrupt stream throws either way.
 */
const SYNC_GUNZIP_MAX_BYTES = 64 * 1024;
async function gunzipWhole(compressed: Buffer): Promise<Buffer> {
  if (compressed.length <= SYNC_GUNZIP_MAX_BYTES) return gunzipSync(compressed);
  return gunzipAsync(compressed, { chunkSize: GUNZIP_CHUNK_BYTES });
}

/** A stream's bytes, whole. */
async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

const utf8 = new TextDecoder();

function plainHeaders(headers: RequestInit["headers"]): Record<string, string> {
  if (headers === undefined) return {};
  if (headers instanceof Headers) return Object.fromEntries(headers.entries());
  if (Array.isArray(headers)) return Object.fromEntries(headers);
  return headers as Record<string, string>;
}

/**
 * `fetch`, sent with undici's `request()`: string or URL input, a string or byte body, headers as
 * a record, a Headers object or pairs; the signal aborts the call, the body included. The answer
 * carries `status`, `statusText`, `ok`, `url`, `type`, `redirected`, `headers` and a body read
 * once with `text()`, `json()` or `arrayBuffer()`, iterated chunk by chunk (`for await … of
 * response.body`), or dropped with `body.cancel()`.
 */
export const upstreamFetch: typeof fetch = async (input, init) => {
  const body = sendableBody(init?.body);
  if (input instanceof Request || body === false) return fetch(input, init);
  const headers = plainHeaders(init?.headers);
  const url = String(input);
  const method = (init?.method ?? "GET").toUpperCase();
  const signal = init?.signal ?? undefined;
  // fetch names itself when the caller does not; so does this (the platform refuses a request without one).
  const names = Object.keys(headers).map((name) => name.toLowerCase());
  const sent = { ...headers };
  if (!names.includes("user-agent")) sent["user-agent"] = "tokensmith";
  if (!names.includes("accept-encoding")) sent["accept-encoding"] = "gzip";
  let answer: Dispatcher.ResponseData;
  try {
    answer = await request(url, { method: method as "GET", headers: sent, body, signal, dispatcher: upstreamAgent });
  } catch (error) {
    throw fetchShaped(error, signal);
  }
  const gzipped = isGzipped(answer, method);
  let used = false;
  /** The body is read once, as fetch allows. */
  const claim = () => {
    if (used) throw new TypeError("Body is unusable: Body has already been read");
    used = true;
  };
  /** The body, read whole, its failures shaped as fetch's. */
  const consume = async <T>(read: () => Promise<T>): Promise<T> => {
    claim();
    try {
      return await read();
    } catch (error) {
      throw fetchShaped(error, signal);
    }
  };
  const response = {
    status: answer.statusCode,
    statusText: "",
    ok: answer.statusCode >= 200 && answer.statusCode < 300,
    url,
    type: "basic",
    redirected: false,
    headers: new AnswerHeaders(answer.headers),
    get bodyUsed() {
      return used;
    },
    body: {
      // Read and dropped (up to undici's dump limit, then the socket is closed): the connection
      // goes back to the pool, and no error is left for nobody to handle.
      cancel: async () => {
        used = true;
        await answer.body.dump().catch(() => undefined);
      },
      // The chunks as they arrive (fetch's ReadableStream is iterated the same way), once.
      async *[Symbol.asyncIterator]() {
        claim();
        try {
          for await (const chunk of gzipped ? gunzipStream(answer.body) : answer.body) yield chunk as Uint8Array;
        } catch (error) {
          throw fetchShaped(error, signal);
        }
      },
    },
    text: () => consume(async () => (gzipped ? utf8.decode(await gunzipWhole(await bytesOf(answer.body))) : answer.body.text())),
    json: () => consume(async () => (gzipped ? (JSON.parse(utf8.decode(await gunzipWhole(await bytesOf(answer.body)))) as unknown) : answer.body.json())),
    arrayBuffer: () =>
      consume(async () => {
        if (!gzipped) return answer.body.arrayBuffer();
        const bytes = await gunzipWhole(await bytesOf(answer.body));
        return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
      }),
  };
  return response as unknown as Response;
};

/**
 * A failure as fetch reports it, for callers that read it (the dashboard names `cause.code`):
 * an aborted call rejects with the signal's reason; anything else is a TypeError "fetch failed"
 * whose cause is the network error (ECONNREFUSED, a reset socket, …).
 */
function fetchShaped(error: unknown, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  return new TypeError("fetch failed", { cause: error });
}
