// The built broker (`build/server/main.js`, what `npm start` runs) as a process of its own on a
// free loopback port, for scenarios that measure more than one instance or the broker's own CPU.
import { spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

// BENCH_BROKER_MAIN: another build's main.js, to compare two versions within one run.
const MAIN = process.env.BENCH_BROKER_MAIN || fileURLToPath(new URL("../build/server/main.js", import.meta.url));

async function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export async function spawnBroker(env) {
  const port = await freePort();
  // BENCH_BROKER_NODE_ARGS: flags for the broker's node (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), to profile it.
  const nodeArgs = process.env.BENCH_BROKER_NODE_ARGS ? process.env.BENCH_BROKER_NODE_ARGS.split(" ") : [];
  const child = spawn(process.execPath, [...nodeArgs, MAIN], {
    env: { PATH: process.env.PATH, PORT: String(port), LOG_LEVEL: process.env.BENCH_LOG_LEVEL || "info", ...env },
    // The log is drained into nothing (BENCH_BROKER_LOG: appended to that file): the broker pays
    // for writing it, as in production.
    stdio: ["ignore", process.env.BENCH_BROKER_LOG ? openSync(process.env.BENCH_BROKER_LOG, "a") : "ignore", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i += 1) {
    if (child.exitCode !== null) throw new Error(`broker exited with ${child.exitCode}`);
    try {
      await fetch(`${url}/`);
      break;
    } catch {
      if (i > 200) throw new Error("broker did not start");
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    child,
    url,
    /** CPU milliseconds the process has used so far (Linux /proc). */
    cpuMs: () => {
      const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1].split(" ");
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    },
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
