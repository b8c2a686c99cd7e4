// An emulated network link in user space (this kernel has no netem): a TCP relay on loopback that
// puts a round-trip time, a bandwidth and a connection-setup round trip between a client and a
// server. Each direction is one wire all connections share: a chunk leaves when the wire has
// finished sending what is ahead of it (bytes × 8 ÷ bandwidth) and arrives half a round trip
// later, in order on its connection. The first
// bytes of a connection wait `setupRoundTrips` × RTT more (TCP's handshake; 2 for TCP + TLS 1.3).
// A sender is held back (its socket paused) while more than a window of its bytes is still on the
// link — twice the bandwidth-delay product, at least 256 KiB — as TCP's receive window would hold
// it: without that, a server thinks a large answer sent long before the client has it, and its
// keep-alive timer can close the connection under a client that is about to reuse it.
// Not modelled: slow start, loss. So the link is, if anything, friendlier than a real one: a
// floor, not a forecast.
import { createConnection, createServer, type Socket } from "node:net";
import { listenOnLoopback } from "./listen.js";

export interface LinkOptions {
  /** Round-trip time in milliseconds (each direction gets half). */
  rttMs: number;
  /** Bandwidth in megabits per second, each direction. */
  mbit: number;
  /** Round trips before a new connection carries data (1: TCP's handshake). */
  setupRoundTrips?: number;
}

export interface LinkStats {
  connections: number;
  /** Bytes carried client → server and server → client. */
  bytesUp: number;
  bytesDown: number;
}

export interface Link {
  /** `http://127.0.0.1:<port>`: connect here instead of to the target. */
  readonly url: string;
  readonly port: number;
  /** The link's settings; a change applies to chunks sent after it. */
  options: LinkOptions;
  readonly stats: LinkStats;
  resetStats(): void;
  /**
   * Cuts every connection open across the link (as a network change would): a client's kept
   * connections are gone, and its next request opens a new one, handshake included. For a
   * measurement that must start cold.
   */
  dropConnections(): void;
  close(): Promise<void>;
}

/** The least time a transfer can take on this link: its chain of round trips plus its bytes. */
export function linkFloorMs(link: LinkOptions, transfer: { roundTrips: number; bytes: number }): number {
  return transfer.roundTrips * link.rttMs + serializationMs(link, transfer.bytes);
}

function serializationMs(link: LinkOptions, bytes: number): number {
  return link.mbit > 0 ? (bytes * 8) / (link.mbit * 1000) : 0;
}

/** The most bytes a sender may have on the link: twice the bandwidth-delay product, ≥ 256 KiB. */
function windowBytes(link: LinkOptions): number {
  const bdp = link.mbit > 0 ? (link.mbit * 1e6 * link.rttMs) / 8 / 1000 : Number.POSITIVE_INFINITY;
  return Math.max(256 * 1024, 2 * bdp);
}

/** One direction of the whole link: every connection's bytes share its bandwidth, as on one real link. */
class Wire {
  private nextFree = 0;

  /** Puts `bytes` on the wire behind what is already on it; returns when the last bit has left. */
  carry(bytes: number, options: LinkOptions): number {
    const departs = Math.max(performance.now(), this.nextFree);
    this.nextFree = departs + serializationMs(options, bytes);
    return this.nextFree;
  }
}

/** One direction of one connection: chunks in, delivered in order at their arrival times. */
class Lane {
  private readonly pending: (Buffer | null)[] = [];
  private readonly queue: { at: number; chunk: Buffer | null }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private opening: NodeJS.Timeout | undefined;
  /** Bytes sent into the lane and not yet delivered. */
  private inFlight = 0;
  private paused = false;

  constructor(
    private readonly link: () => LinkOptions,
    private readonly wire: Wire,
    private readonly deliver: (chunk: Buffer | null) => void,
    private readonly opensAt: number,
    /** The sending side: paused while more than a window of its bytes is in flight. */
    private readonly source: Socket,
  ) {}

  send(chunk: Buffer | null): void {
    if (chunk) {
      this.inFlight += chunk.length;
      if (!this.paused && this.inFlight > windowBytes(this.link())) {
        this.paused = true;
        this.source.pause();
      }
    }
    // Before the handshake is over, bytes wait at this end (they do not hold the wire meanwhile).
    if (performance.now() < this.opensAt || this.pending.length > 0) {
      this.pending.push(chunk);
      // Node's timers keep whole milliseconds: this one may fire a fraction before opensAt, and a
      // chunk sent in that fraction waits here again; so each firing clears the handle, and a
      // chunk that finds none sets another (a kept handle would leave it here for good).
      this.opening ??= setTimeout(() => {
        this.opening = undefined;
        for (const held of this.pending.splice(0)) this.carry(held);
      }, Math.max(0, this.opensAt - performance.now()));
      return;
    }
    this.carry(chunk);
  }

  stop(): void {
    clearTimeout(this.timer);
    clearTimeout(this.opening);
    this.queue.length = 0;
    this.pending.length = 0;
  }

  private carry(chunk: Buffer | null): void {
    const options = this.link();
    const sent = chunk ? this.wire.carry(chunk.length, options) : performance.now();
    // Never before the chunk ahead of it on this connection (an end carries no bytes).
    const at = Math.max(sent + options.rttMs / 2, this.queue.at(-1)?.at ?? 0);
    this.queue.push({ at, chunk });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.queue.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const now = performance.now();
      while (this.queue.length > 0 && this.queue[0]!.at <= now + 0.5) {
        const { chunk } = this.queue.shift()!;
        if (chunk) this.inFlight -= chunk.length;
        this.deliver(chunk);
      }
      if (this.paused && this.inFlight <= windowBytes(this.link()) / 2) {
        this.paused = false;
        this.source.resume();
      }
      this.schedule();
    }, Math.max(0, this.queue[0]!.at - performance.now()));
  }
}

/** Starts a relay on a loopback port that carries every connection to `target` over the link. */
export async function startLink(target: { host?: string; port: number }, options: LinkOptions): Promise<Link> {
  const stats: LinkStats = { connections: 0, bytesUp: 0, bytesDown: 0 };
  const sockets = new Set<Socket>();
  let current = { ...options };
  const up = new Wire();
  const down = new Wire();

  const server = createServer({ noDelay: true, allowHalfOpen: true }, (client) => {
    stats.connections += 1;
    const upstream = createConnection({ host: target.host ?? "127.0.0.1", port: target.port, noDelay: true, allowHalfOpen: true });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    }
    const settings = () => current;
    // The handshake: nothing crosses until the setup round trips have passed.
    const opensAt = performance.now() + (current.setupRoundTrips ?? 1) * current.rttMs;
    const toServer = new Lane(settings, up, (chunk) => (chunk ? upstream.write(chunk) : upstream.end()), opensAt, client);
    const toClient = new Lane(settings, down, (chunk) => (chunk ? client.write(chunk) : client.end()), opensAt, upstream);
    client.on("data", (chunk: Buffer) => {
      stats.bytesUp += chunk.length;
      toServer.send(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      stats.bytesDown += chunk.length;
      toClient.send(chunk);
    });
    client.on("end", () => toServer.send(null));
    upstream.on("end", () => toClient.send(null));
    const fail = () => {
      toServer.stop();
      toClient.stop();
      client.destroy();
      upstream.destroy();
    };
    client.on("error", fail);
    upstream.on("error", fail);
    // A side that is gone for good takes the other with it once its queued bytes are delivered.
    client.on("close", () => toServer.send(null));
    upstream.on("close", () => toClient.send(null));
  });
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get options() {
      return current;
    },
    set options(next: LinkOptions) {
      current = { ...next };
    },
    stats,
    resetStats() {
      stats.connections = 0;
      stats.bytesUp = 0;
      stats.bytesDown = 0;
    },
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
