import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { LINGER } from "./limits.js";

type Bounds = typeof LINGER;
const lingering = new WeakSet<Socket>();

/**
 * Marks an answer given before the request body was read in full (a refusal mid-body, a deadline):
 * `Connection: close`, and a lingering close instead of node:http's immediate one.
 *
 * node:http ends a `Connection: close` response with `socket.destroySoon()`: FIN, then close as
 * soon as the FIN is written. If the client is still sending, its bytes reach a closed socket,
 * the kernel answers them with RST, and the RST makes the client's kernel throw away the answer
 * it had not read yet: the client sees EPIPE or ECONNRESET and never the 413 (RFC 7230 6.6 asks
 * for exactly this lingering close). So this socket's `destroySoon` sends the FIN, then keeps
 * reading and discarding until the client stops sending or closes, or a time bound of LINGER is
 * reached (however many bytes that takes: see LINGER).
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse, bounds: Bounds = LINGER): void {
  closeAfterResponse(req.socket, res, bounds, () => req.resume()); // whatever node:http's parser still hands over is dropped
}

/** `Connection: close` on the response in progress on `socket`, then a lingering close. */
export function closeAfterResponse(socket: Socket, res: ServerResponse, bounds: Bounds = LINGER, onLinger?: () => void): void {
  if (!res.headersSent) res.setHeader("Connection", "close");
  if (lingering.has(socket)) return;
  lingering.add(socket);
  socket.destroySoon = () => {
    onLinger?.();
    linger(socket, bounds);
  };
}

/** Whether this socket is answered and lingering (or about to): its further parse errors are expected. */
export function isLingering(socket: Socket): boolean {
  return lingering.has(socket);
}

/**
 * Ends the socket with `answer` (raw HTTP bytes, for requests node:http's parser refused) and
 * lingers as above: the client may still be sending the request the parser choked on.
 */
export function endWithLinger(socket: Socket, answer: string, bounds: Bounds = LINGER): void {
  lingering.add(socket);
  socket.write(answer);
  linger(socket, bounds);
}

function linger(socket: Socket, bounds: Bounds): void {
  if (socket.destroyed) return;
  socket.end(); // the FIN after the answer; the server's sockets are half-open, so reading goes on
  // node:http's parser reads the socket's handle itself (no 'data' events in JavaScript), so
  // progress is watched through bytesRead.
  let lastBytes = socket.bytesRead;
  let idleSince = Date.now();
  const startedAt = idleSince;
  const stop = () => {
    clearInterval(watch);
    socket.destroy();
  };
  const watch = setInterval(() => {
    const bytes = socket.bytesRead;
    const now = Date.now();
    if (bytes !== lastBytes) {
      lastBytes = bytes;
      idleSince = now;
    }
    if (now - idleSince >= bounds.idleMs || now - startedAt >= bounds.maxMs) stop();
  }, Math.min(100, bounds.idleMs));
  watch.unref();
  socket.once("end", stop); // the client has finished sending
  socket.once("close", () => clearInterval(watch));
}
