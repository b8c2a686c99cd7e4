import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { Express } from "express";
import { BrokerError } from "../../shared/broker-error.js";

/**
 * Listens with the app and answers requests Node's HTTP parser rejects before Express sees them
 * (an unknown method, a malformed request line, oversized headers) with the spec's JSON body, not
 * Node's bare `400 Bad Request`.
 */
export function serve(app: Express, port: number, host: string | undefined, onListening: () => void): Server {
  const server = host === undefined ? app.listen(port, onListening) : app.listen(port, host, onListening);
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
