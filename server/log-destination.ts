import { pino, type DestinationStream } from "pino";

interface TurnWriter extends DestinationStream {
  /** Writes what is pending now (also run on process exit). */
  flushSync(): void;
}

/**
 * A log destination that collects the lines of one event-loop turn and writes them with one
 * synchronous write(2) when the turn ends (sonic-boom underneath handles partial writes and a full
 * pipe). Under the token bench's load, a write per line cost /token 15-20% of its throughput on
 * this machine, far more than pino's serialising; pino's asynchronous writer (a round trip through
 * libuv's thread pool, where WebCrypto's signature checks also run) cost 6-10%. A line is on its
 * way to the OS before the next turn starts; lines still pending are written on process exit, an
 * uncaught exception included; only a kill that skips exit handlers (SIGKILL, a native crash) can
 * lose them.
 */
export function createTurnWriter(fd = 1): TurnWriter {
  // One writer per descriptor, however many loggers a process makes (a test or the bench starts
  // many brokers in one process): their lines share the turn's one write, and one exit listener
  // flushes them (a listener per logger passed Node's limit of 10 and warned).
  let writer = writers.get(fd);
  if (!writer) {
    writer = newTurnWriter(fd);
    writers.set(fd, writer);
  }
  return writer;
}

const writers = new Map<number, TurnWriter>();

function newTurnWriter(fd: number): TurnWriter {
  const out = pino.destination({ dest: fd, sync: true });
  let pending: string[] = [];
  let scheduled = false;
  const flushSync = () => {
    scheduled = false;
    if (pending.length === 0) return;
    const text = pending.length === 1 ? pending[0]! : pending.join("");
    pending = [];
    out.write(text);
  };
  process.once("exit", flushSync);
  return {
    write(line: string) {
      pending.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flushSync);
      }
    },
    flushSync,
  };
}
