// Helpers shared by the deploy scripts (smoke-test.mjs, compose-test.mjs): one checked line of
// output per claim, and free loopback ports.
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
