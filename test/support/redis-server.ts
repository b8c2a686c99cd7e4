// A redis-server of a test's own, on a port of its own, so a test can stop and restart it
// without touching the shared one on 6379.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface OwnRedis {
  port: number;
  url: string;
  /** Starts it (again: on the same port, and with `dir`, on the same data). */
  start(): Promise<void>;
  /** SIGKILL (default: gone at once, nothing saved) or SIGTERM (Redis's own shutdown); waits for the exit. */
  stop(signal?: "SIGKILL" | "SIGTERM"): Promise<void>;
  /** Runs one redis-cli command against it. */
  cli(...args: string[]): Promise<string>;
}

/**
 * Without options, nothing is kept across a restart. With `dir`, Redis keeps an append-only file
 * there (`appendonly yes`, fsync every second: the shipped compose and Kubernetes Redis) and a
 * restart on that directory reads it back.
 */
export async function ownRedis(options: { dir?: string } = {}): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const cli = (...args: string[]) =>
    new Promise<string>((resolve) => {
      const run = spawn("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args]);
      let out = "";
      run.stdout.on("data", (d) => (out += String(d)));
      run.on("close", () => resolve(out.trim()));
      run.on("error", () => resolve(""));
    });
  const persistence = options.dir ? ["--dir", options.dir, "--appendonly", "yes", "--appendfsync", "everysec"] : ["--appendonly", "no"];
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    cli,
    async start() {
      child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", ...persistence], { stdio: "ignore" });
      for (let i = 0; i < 100; i += 1) {
        if ((await cli("ping")) === "PONG") return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`redis-server did not start on ${port}`);
    },
    async stop(signal = "SIGKILL") {
      // Stopped already (an exit code, or killed by a signal): nothing to wait for.
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill(signal);
      await exited;
    },
  };
}
