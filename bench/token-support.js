// Helpers for /token scenarios that drive a broker and the floor server with autocannon against a
// simulator in its own process: a forked child's question and answer over IPC, a process's CPU and
// RSS, the floor server, one load run.
import { fork } from "node:child_process";
import { createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { importPKCS8, SignJWT } from "jose";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const TICKS_PER_SECOND = 100; // Linux USER_HZ

/** CPU ms used so far and resident memory (MB) of a process (Linux /proc). */
export function processTimes(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
  return { cpuMs, rssMb: rssKb / 1024 };
}

/** Sends `message` (if any) to a forked child and resolves with its first reply of `type`. */
export function ask(child, message, type) {
  return new Promise((resolve) => {
    const onMessage = (reply) => {
      if (reply.type === type) {
        child.off("message", onMessage);
        resolve(reply);
      }
    };
    child.on("message", onMessage);
    if (message) child.send(message);
  });
}

/** bench/token-floor-server.js: the least any broker must do per exchange (verify, one mint, answer). */
export async function startFloor(floor, transport = "fetch") {
  const key = await importPKCS8(createPrivateKey(floor.appKeyPem).export({ type: "pkcs8", format: "pem" }), "RS256");
  const now = Math.floor(Date.now() / 1000);
  const appJwt = await new SignJWT({}).setProtectedHeader({ alg: "RS256" }).setIssuer(String(floor.appId)).setIssuedAt(now - 30).setExpirationTime(now + 570).sign(key);
  const child = fork(here("token-floor-server.js"), [], { env: { ...process.env, FLOOR_CONFIG: JSON.stringify({ ...floor, appJwt }), FLOOR_TRANSPORT: transport }, stdio: "inherit" });
  const { port } = await ask(child, null, "ready");
  return { child, url: `http://127.0.0.1:${port}`, stop: () => child.send("exit") };
}

/** POST /token for `seconds` over `connections`, each request with the next token of the pool. */
export async function loadToken(url, tokens, { seconds, connections }) {
  let next = 0;
  const result = await autocannon({
    url: `${url}/token`,
    method: "POST",
    connections,
    duration: seconds,
    headers: { "content-type": "application/json" },
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({ oidcToken: tokens[next++ % tokens.length], owner: "octo-org", repo: "app", ref: "refs/heads/main", runId: "1" }),
        }),
      },
    ],
  });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, ok: result["2xx"], failed: result.non2xx + result.errors + result.timeouts };
}

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
