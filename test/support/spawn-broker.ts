// Runs the built broker (`build/server/main.js`, what `npm start` runs) as a child process.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { keepLogs } from "./log-sink.js";

const MAIN = fileURLToPath(new URL("../../build/server/main.js", import.meta.url));

export interface BrokerProcess {
  url: string;
  child: ChildProcess;
  /** Every line the process wrote to stdout and stderr. */
  lines: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Runs the built broker with settings it must refuse to start with: resolves with its exit code and
 * every line it wrote once it exits (a broker that starts listening is stopped and fails the wait).
 */
export async function spawnBrokerToExit(env: Record<string, string | undefined>, timeoutMs = 30_000): Promise<{ code: number | null; lines: string[] }> {
  const child = spawn(process.execPath, [MAIN], { env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE, PORT: "0", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  const take = (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean));
  child.stdout!.on("data", take);
  child.stderr!.on("data", take);
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once("close", (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  keepLogs(lines);
  return { code, lines };
}

/**
 * Runs the built broker and resolves once it listens. One that does not within `timeoutMs` (30 s: a
 * CI machine running the suite's other files can take 10 s to start a process) is killed before
 * the wait fails, so no broker outlives its test.
 */
export async function spawnBroker(env: Record<string, string | undefined>, timeoutMs = 30_000): Promise<BrokerProcess> {
  const child = spawn(process.execPath, [MAIN], {
    // SENDER_REQUESTS_PER_SECOND off unless the test sets it: the suite's clients all send from
    // 127.0.0.1, faster than one real sender (test/sender-admission.test.ts tests the limit).
    env: { PATH: process.env.PATH, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE, PORT: "0", SENDER_REQUESTS_PER_SECOND: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`broker did not start within ${timeoutMs} ms: ${lines.join("\n")}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        lines.push(line);
        try {
          const entry = JSON.parse(line) as { msg?: string; port?: number };
          if (entry.msg === "tokensmith broker listening" && entry.port) {
            clearTimeout(timer);
            resolve(entry.port);
          }
        } catch {
          // not JSON: kept in lines for the failure message
        }
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then((code) => reject(new Error(`broker exited with ${code}: ${lines.join("\n")}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    lines,
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null) child.kill(signal);
      const code = await exited;
      keepLogs(lines);
      return code;
    },
  };
}
