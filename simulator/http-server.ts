// The loopback HTTP front end: records every request, applies latency and faults, then hands
// over to the route table. Tests talk to it over real sockets, so timeouts and resets are real.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FaultTable } from "./faults.js";
import { jsonChunks } from "./json-text.js";
import type { Router } from "./router.js";
import type { SecondaryLimits } from "./secondary-limits.js";
import type { RecordedRequest, RequestAuth, RouteResult, Simulator } from "./types.js";

export const GARBAGE_BODY = "<<not json";
const JSON_TYPE = "application/json; charset=utf-8";

export interface HttpServerDeps {
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
}

export interface RunningServer {
  url: string;
  close(): Promise<void>;
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

function send(res: ServerResponse, record: RecordedRequest, result: RouteResult, requestId: string, answered?: (record: RecordedRequest) => void): void {
  if (res.destroyed || res.writableEnded) return;
  const headers: Record<string, string> = { "x-github-request-id": requestId };
  let payload: Array<string | Buffer> | undefined;
  if (typeof result.body === "string") {
    payload = [result.body];
    headers["content-type"] = "text/plain; charset=utf-8";
  } else if (result.body !== undefined) {
    payload = jsonChunks(result.body) ?? [];
    headers["content-type"] = JSON_TYPE;
  }
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name.toLowerCase()] = value;
  if (payload !== undefined) headers["content-length"] = String(payload.reduce((sum, chunk) => sum + (typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length), 0));
  record.response = { status: result.status, headers, body: result.body };
  answered?.(record);
  res.writeHead(result.status, headers);
  // Kept bytes go to the socket as they are (json-text.ts): one writev, no copy of the whole body.
  res.cork();
  for (const chunk of payload ?? []) res.write(chunk);
  res.end(); // uncorks
}

export async function startHttpServer(deps: HttpServerDeps): Promise<RunningServer> {
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  let counter = 0;

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
    };
    deps.requests.push(record);
    // In flight from arrival until answered or dropped (a hang counts until the client gives up).
    const admitted = deps.limits.arrive({ method, path: record.path, body, auth: record.auth, requestId });
    res.once("close", admitted.leave);
    if (admitted.refusal) return send(res, record, admitted.refusal, requestId, deps.answered);

    const latency = deps.latencyMs();
    if (latency > 0) await delay(latency);
    if (closed) return;

    const fault = deps.faults.take(method, record.path, record.auth.kind === "installation" ? deps.sim().tokens.get(record.auth.token)?.installationId : undefined);
    if (fault === "hang") return; // left open until the client gives up or sim.close()
    if (fault === "reset") {
      req.socket.destroy();
      return;
    }
    if (fault === "garbage") return send(res, record, { status: 200, headers: { "content-type": JSON_TYPE }, body: GARBAGE_BODY }, requestId, deps.answered);
    if (fault) return send(res, record, fault, requestId, deps.answered);

    const result = await deps.router.dispatch({
      method,
      path: record.path,
      query: record.query,
      body,
      auth: record.auth,
      headers: record.headers,
      sim: deps.sim(),
    });
    send(res, record, result, requestId, deps.answered);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { "content-type": JSON_TYPE });
        res.end(JSON.stringify({ message: `simulator: ${String(error)}` }));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
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
