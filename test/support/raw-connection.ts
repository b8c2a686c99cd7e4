// Raw HTTP/1.1 connections for tests of the HTTP edge (bodies, budgets, lingering close): a request
// head written by hand, a body sent at the test's pace, and what came back before the socket closed.
import { connect, type Socket } from "node:net";

/** A raw connection: what it has received so far, whether it is closed, and how it ended. */
export interface RawConnection {
  socket: Socket;
  text: () => string;
  closed: Promise<{ text: string; error?: string }>;
  /** Bytes written so far, head included. */
  sent: () => number;
  /** While set, the broker's FIN does not end this client's sending. */
  pumping?: boolean;
}

export function openRaw(url: string, head: string): Promise<RawConnection> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    // allowHalfOpen: the broker's FIN after its answer does not stop this client's sending.
    const socket = connect({ port: Number(port), host: "127.0.0.1", allowHalfOpen: true }, () => {
      socket.off("error", reject);
      socket.write(head);
      resolve(raw);
    });
    let text = "";
    let sent = 0;
    let error: string | undefined;
    socket.on("data", (chunk) => (text += String(chunk)));
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code));
    socket.on("end", () => {
      if (!raw.pumping) socket.end();
    });
    const closed = new Promise<{ text: string; error?: string }>((done) => socket.on("close", () => done({ text, error })));
    const raw: RawConnection = { socket, text: () => text, closed, sent: () => sent };
    const write = socket.write.bind(socket) as (data: string | Buffer) => boolean;
    socket.write = ((data: string | Buffer, ...rest: unknown[]) => {
      sent += data.length;
      return (write as (...args: unknown[]) => boolean)(data, ...rest);
    }) as typeof socket.write;
    socket.once("error", reject);
  });
}

/** One chunk of a chunked body: `size` bytes of "x", framed. */
export function chunkFrame(size: number): Buffer {
  return Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, "x"), Buffer.from("\r\n")]);
}

/**
 * Keeps writing `frame` until `total` bytes are written (head included) or the socket dies,
 * whatever comes back, then ends the socket (with `last` first, e.g. a chunked body's last chunk).
 * With `pace`, waits `pace.ms` after every `pace.bytes` written, like a client on a network slower
 * than loopback: its body is still arriving well after the broker's answer.
 */
export function pump(raw: RawConnection, frame: Buffer, total: number, options: { pace?: { bytes: number; ms: number }; last?: Buffer } = {}): Promise<void> {
  raw.pumping = true;
  return new Promise((resolve) => {
    let burst = 0;
    const next = () => {
      burst = 0;
      while (raw.sent() < total && !raw.socket.destroyed) {
        const more = raw.socket.write(frame);
        burst += frame.length;
        if (options.pace && burst >= options.pace.bytes) return void setTimeout(next, options.pace.ms);
        if (!more) return void raw.socket.once("drain", next);
      }
      if (!raw.socket.destroyed) {
        if (options.last) raw.socket.write(options.last);
        raw.socket.end();
      } // all sent (the broker read and dropped it): done
      resolve();
    };
    raw.socket.once("close", () => resolve());
    next();
  });
}

export async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A whole answer (status, lower-cased headers, JSON body); throws if the body is cut short. */
export function parseAnswer(text: string): { status: number; headers: Record<string, string>; body: unknown } {
  const split = text.indexOf("\r\n\r\n");
  if (split < 0) throw new Error(`no complete answer head in ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...lines] = text.slice(0, split).split("\r\n");
  const body = text.slice(split + 4);
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
  const length = Number(headers["content-length"]);
  if (!(Buffer.byteLength(body) >= length)) throw new Error(`answer cut short: ${Buffer.byteLength(body)} of ${length} body bytes`);
  return { status: Number(statusLine!.split(" ")[1]), headers, body: JSON.parse(body.slice(0, length)) as unknown };
}
