// Helpers for /token scenarios that drive a broker and the floor server with autocannon against a
// simulator in its own process: a forked child's question and answer over IPC, a process's CPU and
// RSS, the floor server, one load run.
import { fork } from "node:child_process";
import { createPrivateKey, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
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

/**
 * Fresh OIDC tokens like `template` (a token of the pool): the same header and claims, its own
 * `jti` and `run_id`, signed RS256 with the issuer's key. The broker takes a token once, so a
 * load that reused a pool would measure 409s. Signing costs the bench's process about 0.1 ms of
 * CPU a token (node:crypto), the same for every target of a run.
 */
export function tokenSigner(template, keyPem) {
  const key = createPrivateKey(keyPem);
  const [header, payload] = template.split(".");
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  let count = 0;
  return () => {
    count += 1;
    const body = Buffer.from(JSON.stringify({ ...claims, jti: `${claims.jti}-${count}`, run_id: String(1_000_000 + count) })).toString("base64url");
    const input = `${header}.${body}`;
    return `${input}.${sign("RSA-SHA256", Buffer.from(input), key).toString("base64url")}`;
  };
}

/** POST /token for `seconds` over `connections`, each request with a token of its own (`tokens()`). */
export async function loadToken(url, tokens, { seconds, connections }) {
  // Imported here: the scenarios that only sign tokens and ask children do not load it (0.2 s of CPU).
  const { default: autocannon } = await import("autocannon");
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
          body: JSON.stringify({ oidcToken: tokens(), owner: "octo-org", repo: "app", ref: "refs/heads/main", runId: "1" }),
        }),
      },
    ],
  });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, ok: result["2xx"], failed: result.non2xx + result.errors + result.timeouts };
}

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
