// Jest loads this outside its module mapping (a relative "./x.js" import of a .ts file fails
// here), so, like log-scan.ts, it uses Node's builtins only.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const REDIS_SERVER_MISSING =
  "tokensmith tests: redis-server is not on PATH: install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set TOKENSMITH_TEST_REDIS_URL to a Redis you run";

// Test workers inherit what is set here: the log directory every broker appends its lines to
// (log-sink.ts), and the shared Redis's URL (redis-url.ts). That Redis is this run's own, from the
// redis-server on PATH (`npm test`'s pretest provisions it or names what to install), on a free
// port: no fixed 6379 to collide on, nothing left behind. TOKENSMITH_TEST_REDIS_URL set
// beforehand uses that Redis instead.
export default async function globalSetup(): Promise<void> {
  process.env.TOKENSMITH_TEST_LOG_DIR = mkdtempSync(join(tmpdir(), "tokensmith-logs-"));
  // Node's compile cache for this run's processes (the workers, and the brokers spawn-broker.ts
  // starts): each of the suite's ~140 broker processes compiles the same modules, and with the
  // cache it starts on about 13 % less CPU (docs/development.md#test-time). A fresh directory per
  // run: nothing carries over between runs.
  process.env.NODE_COMPILE_CACHE = mkdtempSync(join(tmpdir(), "tokensmith-compile-cache-"));
  if (process.env.TOKENSMITH_TEST_REDIS_URL) return;
  const port = await freePort();
  const redis = await startRedis(port);
  process.env.TOKENSMITH_TEST_REDIS_URL = `redis://127.0.0.1:${port}`;
  // Stopped when jest's process ends, however it ends: the run never waits on it (unref), and a
  // Ctrl-C or a supervisor's SIGTERM takes it along before the signal's default action.
  redis.unref();
  const stop = () => redis.exitCode === null && redis.signalCode === null && redis.kill("SIGKILL");
  process.once("exit", stop);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      stop();
      process.kill(process.pid, signal);
    });
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  const failed = new Promise<never>((_, reject) => {
    child.once("error", (error: NodeJS.ErrnoException) => reject(new Error(error.code === "ENOENT" ? REDIS_SERVER_MISSING : `redis-server: ${error.message}`)));
    child.once("exit", (code) => reject(new Error(`tokensmith tests: redis-server exited (${code}) before answering on 127.0.0.1:${port}`)));
  });
  failed.catch(() => undefined);
  for (let i = 0; i < 200; i += 1) {
    if (await Promise.race([ping(port), failed])) return child;
    await Promise.race([new Promise((resolve) => setTimeout(resolve, 50)), failed]);
  }
  child.kill("SIGKILL");
  throw new Error(`tokensmith tests: redis-server did not answer on 127.0.0.1:${port} within 10 s`);
}

/** PONG to a PING over a plain socket: no redis-cli needed. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    let text = "";
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      text += String(chunk);
      if (text.includes("\r\n")) done(text.startsWith("+PONG"));
    });
  });
}
