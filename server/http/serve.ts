import { createServer, type RequestListener, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { BrokerError } from "../../shared/broker-error.js";
import type { Logger } from "../log.js";
import { DEFAULT_MAX_CONNECTIONS, SERVER_TIMEOUTS } from "./limits.js";
import { closeAfterResponse, endWithLinger, isLingering } from "./lingering-close.js";

interface ServeOptions {
  /** Open client connections at most (MAX_CONNECTIONS); one more is closed at once, without an answer. */
  maxConnections?: number;
  /** The listen itself failed (EADDRINUSE, EADDRNOTAVAIL, ENOTFOUND); without it the error is thrown. */
  onListenError?: (error: NodeJS.ErrnoException) => void;
}

/**
 * Listens with the app and answers requests Node's HTTP parser rejects before Express sees them
 * (an unknown method, a malformed request line, oversized headers, headers or a request too slow)
 * with the API's JSON body, not Node's bare `400 Bad Request`. Caps connections, and logs the
 * connections it refuses and the ones the process could not accept (out of file descriptors)
 * instead of dying of them.
 */
export function serve(
  app: { listener: RequestListener; broker: { log: Logger } },
  port: number,
  host: string | undefined,
  onListening: () => void,
  options: ServeOptions = {},
): Server {
  const log = app.broker.log;
  const server = createServer(
    {
      headersTimeout: SERVER_TIMEOUTS.headersTimeoutMs,
      requestTimeout: SERVER_TIMEOUTS.requestTimeoutMs,
      keepAliveTimeout: SERVER_TIMEOUTS.keepAliveTimeoutMs,
      connectionsCheckingInterval: SERVER_TIMEOUTS.checkIntervalMs,
    },
    app.listener,
  );
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  if (host === undefined) server.listen(port, onListening);
  else server.listen(port, host, onListening);

  const refused = everySecondAtMost((count) =>
    log.warn({ refused: count, max_connections: server.maxConnections }, "connections refused: MAX_CONNECTIONS open already"),
  );
  server.on("drop", () => refused());
  const acceptFailed = new Map<string, () => void>();
  server.on("error", (error: NodeJS.ErrnoException) => {
    // An error while accepting a connection (EMFILE, ENFILE: out of file descriptors) is not the
    // server's end: libuv closes the connection it could not take and keeps listening. Anything
    // else (EADDRINUSE at listen) still ends the process.
    if (error.syscall !== "accept") {
      if (options.onListenError && (error.syscall === "listen" || error.syscall === "getaddrinfo" || error.syscall === "bind")) return options.onListenError(error);
      throw error;
    }
    const code = error.code ?? "unknown";
    let logOne = acceptFailed.get(code);
    if (!logOne) {
      logOne = everySecondAtMost((count) =>
        log.error({ code, syscall: "accept", failures: count, max_connections: server.maxConnections }, `cannot accept connections: ${describeAcceptError(code)}`),
      );
      acceptFailed.set(code, logOne);
    }
    logOne();
  });

  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    // node:http's parser reports every later chunk of a request it refused again: already answered.
    if (isLingering(socket)) return;
    const inProgress = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    // Bytes after a request that is still being answered (say, a body sent without a length) are
    // a malformed next request: it is answered after that answer, never in its middle.
    // A client gone mid-request (EOF inside a body) is not answered: its request is aborted.
    const gone = error.code === "ECONNRESET" || error.code === "HPE_INVALID_EOF_STATE" || socket.readableEnded;
    if (!socket.writable || gone || (inProgress?.headersSent && !inProgress.writableEnded)) {
      socket.destroy();
      return;
    }
    if (inProgress && !inProgress.headersSent) {
      closeAfterResponse(socket, inProgress); // that answer, with Connection: close, is the last
      return;
    }
    const timedOut = error.code === "ERR_HTTP_REQUEST_TIMEOUT";
    const answer = new BrokerError(timedOut ? "request_timeout" : "invalid_request");
    const body = JSON.stringify(answer.toBody());
    endWithLinger(
      socket,
      `HTTP/1.1 ${timedOut ? "408 Request Timeout" : "400 Bad Request"}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}

function describeAcceptError(code: string): string {
  if (code === "EMFILE") return "the process is out of file descriptors (EMFILE: raise `ulimit -n` or lower MAX_CONNECTIONS)";
  if (code === "ENFILE") return "the system is out of file descriptors (ENFILE)";
  return `accept failed (${code})`;
}

/** Calls `write(count)` at once for the first event, then at most once a second with the events since. */
function everySecondAtMost(write: (count: number) => void): () => void {
  let pending = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    if (pending === 0) return;
    const count = pending;
    pending = 0;
    write(count);
    timer = setTimeout(flush, 1_000);
    timer.unref();
  };
  return () => {
    pending += 1;
    if (!timer) flush();
  };
}
