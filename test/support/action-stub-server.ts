// A loopback HTTP server that records what it is sent and answers as told: stands in for what can
// sit at a broker address that is not a broker (a proxy's 502 page, a hung socket), and counts
// calls to a fallback address that must not be called.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";

export interface StubRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type StubAnswer = { status: number; contentType?: string; headers?: Record<string, string>; body?: string } | "hang";

export interface StubServer {
  url: string;
  requests: StubRequest[];
  close(): Promise<void>;
}

export async function startStubServer(answer: (request: StubRequest) => StubAnswer): Promise<StubServer> {
  const requests: StubRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      requests.push(request);
      const reply = answer(request);
      if (reply === "hang") return; // closeAllConnections() in close() ends it
      res.writeHead(reply.status, { "content-type": reply.contentType ?? "application/json", ...reply.headers });
      res.end(reply.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An address on which nothing listens, and nothing will while the suite runs: a low port (every
 * server the tests start listens on port 0, which the kernel picks from 32768 up), checked closed
 * now. A port freed a moment ago was not enough: another worker's stub broker, answering a good
 * token to anything, could be given it before the action tried it.
 */
export async function closedPortUrl(): Promise<string> {
  for (const port of [1, 9, 13, 17, 19, 37]) {
    if (await refuses(port)) return `http://127.0.0.1:${port}`;
  }
  throw new Error("closedPortUrl: every candidate low port on 127.0.0.1 accepts connections");
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "ECONNREFUSED"));
  });
}

/**
 * A TCP server that accepts connections and never answers (nor closes them): a broker address
 * behind a load balancer whose backend hangs. Counts the connections it accepted.
 */
export async function startSilentServer(): Promise<{ url: string; connections(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createNetServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => accepted,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An HTTP CONNECT proxy on loopback that tunnels every CONNECT host:port to 127.0.0.1:port, so a
 * broker-url with a name nothing resolves is reachable only through the proxy. Records the
 * CONNECT targets it was asked for and counts the connections it accepted. `refuse`: answers every
 * CONNECT with that status instead (407: a proxy that wants credentials). `tls`: the proxy itself
 * speaks https (HTTPS_PROXY=https://…) with that key and certificate.
 */
export async function startConnectProxy(options: { refuse?: number; tls?: { key: string; cert: string } } = {}): Promise<{ url: string; connects: string[]; connections(): number; close(): Promise<void> }> {
  const connects: string[] = [];
  const sockets = new Set<Socket>();
  let accepted = 0;
  const refuseOthers = (_req: unknown, res: { writeHead(status: number, headers: Record<string, string>): void; end(body: string): void }) => {
    res.writeHead(405, { "content-type": "text/plain" });
    res.end("CONNECT only");
  };
  const server: Server = options.tls ? createHttpsServer(options.tls, refuseOthers) : createServer(refuseOthers);
  server.on(options.tls ? "secureConnection" : "connection", () => void (accepted += 1));
  server.on("tlsClientError", () => void (accepted += 1));
  server.on("connect", (req: { url?: string }, client: Socket, head: Buffer) => {
    const target = req.url ?? "";
    connects.push(target);
    tracked(sockets, client);
    if (options.refuse !== undefined) {
      client.end(`HTTP/1.1 ${options.refuse} Refused\r\nProxy-Authenticate: Basic realm="proxy"\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const port = Number(/:(\d+)$/.exec(target)?.[1]);
    const upstream = connect(port, "127.0.0.1", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    tracked(sockets, upstream);
    tiedTogether(client, upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? "https" : "http"}://127.0.0.1:${port}`,
    connects,
    connections: () => accepted,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * TLS on loopback in front of a plain-http server on `targetPort`: each connection is decrypted
 * with the given key and certificate and piped to the target, so an https broker-url (a name of
 * the certificate, trusted through NODE_EXTRA_CA_CERTS) reaches the in-process broker.
 */
export async function startTlsFront(targetPort: number, tls: { key: string; cert: string }): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTlsServer(tls, (client) => {
    const upstream = connect(targetPort, "127.0.0.1");
    client.pipe(upstream);
    upstream.pipe(client);
    tracked(sockets, client);
    tracked(sockets, upstream);
    tiedTogether(client, upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** In `sockets` while open (close() destroys what is left), its errors ignored. */
function tracked(sockets: Set<Socket>, socket: Socket): void {
  sockets.add(socket);
  socket.on("error", () => undefined);
  socket.on("close", () => sockets.delete(socket));
}

/** Either end closing closes the other. */
function tiedTogether(a: Socket, b: Socket): void {
  a.on("close", () => b.destroy());
  b.on("close", () => a.destroy());
}
