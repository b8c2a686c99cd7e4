// The loopback HTTP front end: records every request, applies latency and faults, then hands
// over to the route table. Tests talk to it over real sockets, so timeouts and resets are real.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createGzip, gzipSync } from "node:zlib";
import { judgeApiVersion } from "./api-version.js";
import type { FaultTable } from "./faults.js";
import { gzipWithKeptRun } from "./gzip-kept.js";
import { listenOnLoopback } from "./listen.js";
import { jsonChunks, joinedChunks } from "./json-text.js";
import type { Router } from "./router.js";
import type { SecondaryLimits } from "./secondary-limits.js";
import type { RecordedRequest, RequestAuth, RouteResult, Simulator } from "./types.js";

export const GARBAGE_BODY = "<<not json";
const JSON_TYPE = "application/json; charset=utf-8";

interface HttpServerDeps {
  router: Router;
  faults: FaultTable;
  requests: RecordedRequest[];
  judge(authorization: string | undefined): RequestAuth;
  latencyMs(): number;
  sim(): Simulator;
  /** Counts requests in flight (and their peak) and answers GitHub's secondary limits. */
  limits: SecondaryLimits;
  /** Told of every answer sent (its record has `response`): the primary rate limit's accounting. */
  answered?(record: RecordedRequest): void;
  /** Headers every answer to this request carries unless its route set them (GitHub's x-ratelimit-*). */
  extraHeaders?(record: RecordedRequest, status: number): Record<string, string> | undefined;
}

interface RunningServer {
  url: string;
  close(): Promise<void>;
  /** Bytes written to clients' sockets for every answer so far (status line, headers, body as sent). */
  readonly wireBytes: number;
}

/**
 * Whether an Accept-Encoding header allows gzip: `gzip` (or `x-gzip`, or `*` when gzip is not
 * named) with a q-value above 0. Absent or empty: identity only (RFC 9110 §12.5.3).
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const text = Array.isArray(header) ? header.join(",") : header;
  if (!text) return false;
  let star: boolean | undefined;
  for (const item of text.split(",")) {
    const [name = "", ...params] = item.split(";").map((part) => part.trim().toLowerCase());
    const q = params.find((param) => param.startsWith("q="));
    const allowed = q === undefined || Number(q.slice(2)) > 0;
    if (name === "gzip" || name === "x-gzip") return allowed;
    if (name === "*") star = allowed;
  }
  return star ?? false;
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("error", () => resolve(undefined));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      if (text === "") return resolve(undefined);
      try {
        resolve(JSON.parse(text));
      } catch {
        resolve(text); // kept raw so a test can see exactly what a client sent
      }
    });
  });
}

/** Told of each answer: `answered` once it is recorded, `count` its bytes on the wire once they are all written. */
interface Outlets {
  answered?: (record: RecordedRequest) => void;
  extraHeaders?: (record: RecordedRequest, status: number) => Record<string, string> | undefined;
  count: (bytes: number) => void;
}

/** How an answer goes out: as asked, or (the "truncated-gzip" fault) its gzip cut in half. */
type Delivery = "asked" | "truncated-gzip";

/**
 * Writes one answer. A JSON body goes out gzip-compressed when the request's Accept-Encoding allows
 * it, as GitHub's API does (`Content-Encoding: gzip`, `Vary: Accept-Encoding`, chunked, no
 * Content-Length), whatever its size; otherwise as it is. Each answer's bytes on the socket are
 * counted into `record.response.wireBytes` and `count` once the last one is handed to the socket
 * (before the client can have read it).
 */
function send(res: ServerResponse, record: RecordedRequest, result: RouteResult, requestId: string, out: Outlets, delivery: Delivery = "asked"): void {
  if (res.destroyed || res.writableEnded) return;
  const headers: Record<string, string> = { "x-github-request-id": requestId };
  let payload: Array<string | Buffer> | undefined;
  let json = false;
  if (typeof result.body === "string") {
    payload = [result.body];
    headers["content-type"] = "text/plain; charset=utf-8";
  } else if (result.body !== undefined) {
    payload = jsonChunks(result.body) ?? [];
    headers["content-type"] = JSON_TYPE;
    json = true;
  }
  for (const [name, value] of Object.entries(out.extraHeaders?.(record, result.status) ?? {})) headers[name] = value;
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name.toLowerCase()] = value;
  const socket = res.socket;
  const before = socket?.bytesWritten ?? 0;
  const response: NonNullable<RecordedRequest["response"]> = { status: result.status, headers, body: result.body, wireBytes: 0 };
  record.response = response;
  out.answered?.(record);
  const finish = () => {
    res.end(); // uncorks
    response.wireBytes = (socket?.bytesWritten ?? before) - before;
    out.count(response.wireBytes);
  };
  if (json && payload !== undefined && delivery === "truncated-gzip") {
    const whole = gzipSync(joinedChunks(payload));
    const half = whole.subarray(0, Math.floor(whole.length / 2));
    Object.assign(headers, { "content-encoding": "gzip", vary: "Accept-Encoding", "content-length": String(half.length) });
    res.writeHead(result.status, headers);
    res.write(half);
    return finish();
  }
  if (json && payload !== undefined && acceptsGzip(record.headers["accept-encoding"])) {
    Object.assign(headers, { "content-encoding": "gzip", vary: "Accept-Encoding" });
    res.writeHead(result.status, headers);
    if (payload.reduce((size, chunk) => size + chunk.length, 0) <= GZIP_SYNC_BYTES) {
      // A small answer (a mint for one repository, a GraphQL page) in one synchronous call: a zlib
      // stream per answer costs its set-up, a job on libuv's threads and turns of the loop. Same
      // bytes on the wire.
      res.write(gzipSync(payload.length === 1 ? payload[0]! : joinedChunks(payload)));
      return finish();
    }
    // Mostly kept bytes (a listing, a mint over many repositories): their compression is reused.
    const reused = gzipWithKeptRun(payload);
    if (reused !== undefined) {
      res.write(reused);
      return finish();
    }
    // 64 KiB pieces: a 22 MB listing compresses to about 1 MB, some 16 writes rather than 64.
    const gzip = createGzip({ chunkSize: 64 * 1024 });
    gzip.on("data", (chunk: Buffer) => {
      if (!res.destroyed) res.write(chunk);
    });
    gzip.on("end", () => {
      if (!res.destroyed) finish();
    });
    // The pieces go in as a few large writes: each write to a zlib stream is a job on libuv's
    // threads and a turn of this loop, and a mint answer over 5,000 repositories is 10,000 pieces
    // (the kept bytes of each repository and the text between them). Written one by one, they
    // took the answer about 1 s to leave (each job waiting for the loop between the GraphQL
    // queries the broker sends meanwhile): a simulator artefact, not GitHub's. Same bytes in,
    // same gzip out. Fresh 1 × 5,000 crawl over the 40 ms / 100 Mbit link, the same broker, new
    // process each, median of 6: 0.900 s and 562 ms of simulator CPU with the small writes,
    // 0.559 s and 287 ms with these.
    for (const group of groups(payload, GZIP_WRITE_BYTES)) gzip.write(group);
    gzip.end();
    return;
  }
  if (payload !== undefined) headers["content-length"] = String(payload.reduce((sum, chunk) => sum + (typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length), 0));
  res.writeHead(result.status, headers);
  // Kept bytes go to the socket as they are (json-text.ts): one writev, no copy of the whole body.
  res.cork();
  for (const chunk of payload ?? []) res.write(chunk);
  finish();
}

/** Answers up to this size (in string length or bytes) are compressed in one synchronous call (see send()). */
const GZIP_SYNC_BYTES = 64 * 1024;
/** Bytes handed to the gzip stream per write (see send()). */
const GZIP_WRITE_BYTES = 1024 * 1024;

/** The pieces joined into buffers of about `size` bytes each, in order. */
function groups(payload: ReadonlyArray<string | Buffer>, size: number): Buffer[] {
  const out: Buffer[] = [];
  let pending: Buffer[] = [];
  let bytes = 0;
  for (const piece of payload) {
    const buffer = typeof piece === "string" ? Buffer.from(piece) : piece;
    pending.push(buffer);
    bytes += buffer.length;
    if (bytes >= size) {
      out.push(Buffer.concat(pending, bytes));
      pending = [];
      bytes = 0;
    }
  }
  if (pending.length > 0) out.push(Buffer.concat(pending, bytes));
  return out;
}

export async function startHttpServer(deps: HttpServerDeps): Promise<RunningServer> {
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  let counter = 0;
  let wireBytes = 0;
  const outlets: Outlets = {
    answered: deps.answered,
    extraHeaders: deps.extraHeaders,
    count: (bytes) => {
      wireBytes += bytes;
    },
  };

  const delay = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = `SIM:${process.pid}:${++counter}`;
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const method = (req.method ?? "GET").toUpperCase();
    const body = await readBody(req);
    const header = req.headers.authorization;
    const record: RecordedRequest = {
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: { ...req.headers },
      body,
      auth: deps.judge(typeof header === "string" ? header : undefined),
      receivedAt: Date.now(),
    };
    deps.requests.push(record);
    // In flight from arrival until answered or dropped (a hang counts until the client gives up).
    const admitted = deps.limits.arrive({ method, path: record.path, body, auth: record.auth, requestId });
    res.once("close", admitted.leave);
    if (admitted.refusal) return send(res, record, admitted.refusal, requestId, outlets);

    const latency = deps.latencyMs();
    if (latency > 0) await delay(latency);
    if (closed) return;

    const fault = deps.faults.take(method, record.path, record.auth.kind === "installation" ? deps.sim().tokens.get(record.auth.token)?.installationId : undefined, body);
    if (fault === "hang") return; // left open until the client gives up or sim.close()
    if (fault === "reset") {
      req.socket.destroy();
      return;
    }
    if (fault === "garbage") return send(res, record, { status: 200, headers: { "content-type": JSON_TYPE }, body: GARBAGE_BODY }, requestId, outlets);
    if (fault && fault !== "truncated-gzip" && !("until" in fault)) return send(res, record, fault, requestId, outlets);

    const result = await deps.router.dispatch({
      method,
      path: record.path,
      query: record.query,
      body,
      auth: record.auth,
      headers: record.headers,
      sim: deps.sim(),
    }, () => judgeApiVersion(record));
    if (typeof fault === "object" && "until" in fault) {
      await fault.until.catch(() => undefined);
      if (closed) return;
    }
    send(res, record, result, requestId, outlets, fault === "truncated-gzip" ? fault : "asked");
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { "content-type": JSON_TYPE });
        res.end(JSON.stringify({ message: `simulator: ${String(error)}` }));
      }
    });
  });
  const port = await listenOnLoopback(server);

  return {
    url: `http://127.0.0.1:${port}`,
    get wireBytes() {
      return wireBytes;
    },
    close: () => {
      if (closed) return Promise.resolve();
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive and hung connections would otherwise hold close() open indefinitely.
      server.closeAllConnections();
      return done;
    },
  };
}
