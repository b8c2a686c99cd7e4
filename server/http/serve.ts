import { createServer, type RequestListener, type Server } from "node:http";
import type { Socket } from "node:net";
import { BrokerError } from "../../shared/broker-error.js";

/**
 * Listens with the app and answers requests Node's HTTP parser rejects before Express sees them
 * (an unknown method, a malformed request line, oversized headers) with the spec's JSON body, not
 * Node's bare `400 Bad Request`.
 */
export function serve(app: { listener: RequestListener }, port: number, host: string | undefined, onListening: () => void): Server {
  const server = createServer(app.listener);
  if (host === undefined) server.listen(port, onListening);
  else server.listen(port, host, onListening);
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (error as { code?: string }).code === "ECONNRESET") {
      socket.destroy();
      return;
    }
    const body = JSON.stringify(new BrokerError("invalid_request").toBody());
    socket.end(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}
