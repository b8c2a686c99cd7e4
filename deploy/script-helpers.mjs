// Helpers shared by the deploy scripts (smoke-test.mjs, compose-test.mjs): one checked line of
// output per claim, free loopback ports, and a command's output.
import { spawn } from "node:child_process";
import { createServer } from "node:net";

/** Prints `ok` or `FAIL` and the line; a failed check throws, ending the script's checks. */
export function check(ok, line) {
  console.log(`${ok ? "ok  " : "FAIL"} ${line}`);
  if (!ok) throw new Error(line);
}

/**
 * `count` distinct free loopback ports: every listener stays open until all are taken (freeing one
 * before asking for the next can hand out the same port twice, and two listeners then collide).
 */
export async function freePorts(count) {
  const servers = [];
  try {
    for (let i = 0; i < count; i += 1) {
      servers.push(await new Promise((resolve, reject) => {
        const server = createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => resolve(server));
      }));
    }
    return servers.map((server) => server.address().port);
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(() => resolve()))));
  }
}

/**
 * Runs `command` with `args` (the environment plus `env`) and resolves with its trimmed output; a
 * non-zero exit rejects with the command and the end of its output (podman's `time=` lines left
 * out), unless `allowFail`.
 */
export function run(command, args, env = {}, { allowFail = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0 && !allowFail) reject(new Error(`${command} ${args.slice(0, 4).join(" ")} exited ${code}: ${(err || out).split("\n").filter((l) => !l.startsWith("time=")).join(" | ").slice(-2000)}`));
      else resolve({ code, out: out.trim(), err: err.trim() });
    });
  });
}
