// Helpers shared by the deploy scripts (smoke-test.mjs, compose-test.mjs): one checked line of
// output per claim, and a free loopback port.
import { createServer } from "node:net";

/** Prints `ok` or `FAIL` and the line; a failed check throws, ending the script's checks. */
export function check(ok, line) {
  console.log(`${ok ? "ok  " : "FAIL"} ${line}`);
  if (!ok) throw new Error(line);
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
