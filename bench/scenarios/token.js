// Scenario `token`: POST /token under load. The broker (`build/server/main.js`, as `npm start`
// runs it), the platform simulator and a floor server each run as a process of their own on
// loopback; autocannon drives them in turn with valid OIDC tokens from a pre-signed pool.
import { fork, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { importPKCS8, SignJWT } from "jose";
import { createPrivateKey } from "node:crypto";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export const description = "POST /token under autocannon (64 connections): broker vs a minimal floor server, both against the simulator in its own process";
const TICKS_PER_SECOND = 100; // Linux USER_HZ

function processTimes(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
  return { cpuMs, rssMb: rssKb / 1024 };
}

function ask(child, message, type) {
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

async function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startBroker(env) {
  const port = await freePort();
  const child = spawn(process.execPath, [here("../../build/server/main.js")], {
    env: { PATH: process.env.PATH, PORT: String(port), LOG_LEVEL: process.env.BENCH_LOG_LEVEL || "info", ...env },
    // The log is drained into nothing: the broker pays for writing it, as in production.
    stdio: ["ignore", "ignore", "inherit"],
  });
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
  return { child, url, stop: () => child.kill("SIGTERM") };
}

async function startFloor(floor) {
  const key = await importPKCS8(createPrivateKey(floor.appKeyPem).export({ type: "pkcs8", format: "pem" }), "RS256");
  const now = Math.floor(Date.now() / 1000);
  const appJwt = await new SignJWT({}).setProtectedHeader({ alg: "RS256" }).setIssuer(String(floor.appId)).setIssuedAt(now - 30).setExpirationTime(now + 570).sign(key);
  const child = fork(here("../token-floor-server.js"), [], { env: { ...process.env, FLOOR_CONFIG: JSON.stringify({ ...floor, appJwt }) }, stdio: "inherit" });
  const { port } = await ask(child, null, "ready");
  return { child, url: `http://127.0.0.1:${port}`, stop: () => child.send("exit") };
}

async function load(url, tokens, { seconds, connections }) {
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
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result["2xx"],
    failed: result.non2xx + result.errors + result.timeouts,
  };
}

async function measure(target, sim, tokens, options) {
  // Warm-up at full load: fills the broker's caches (key set, App JWT, installation) and lets the
  // heap grow to its working size (it levels off within about ten seconds at 64 connections), so
  // "after − before" is growth during the run — what a leak would show — not start-up.
  const atStart = processTimes(target.child.pid);
  await load(target.url, tokens, { seconds: Number(process.env.BENCH_WARMUP_SECONDS || 10), connections: options.connections });
  await ask(sim, "reset", "reset");
  const before = processTimes(target.child.pid);
  const run = await load(target.url, tokens, options);
  const after = processTimes(target.child.pid);
  const { stats } = await ask(sim, "stats", "stats");
  const exchanges = run.ok + run.failed;
  return {
    ...run,
    cpuPerRequest: (after.cpuMs - before.cpuMs) / Math.max(1, exchanges),
    rssStart: atStart.rssMb,
    rssBefore: before.rssMb,
    rssAfter: after.rssMb,
    // Every exchange mints exactly once; requests still in flight when the load stops were minted
    // but not counted by autocannon, so the mints are the true count of exchanges.
    upstreamPerExchange: stats.total / Math.max(1, stats.mints),
    otherUpstream: stats.other,
    appJwts: stats.appJwts,
    jwks: stats.jwks,
  };
}

export async function run(options = {}) {
  const seconds = Number(process.env.BENCH_SECONDS || options.seconds || 15);
  const connections = Number(options.connections || 64);
  const sim = fork(here("../token-simulator-process.js"), [], { stdio: "inherit" });
  const ready = await ask(sim, null, "ready");
  const broker = await startBroker(ready.env);
  const floor = await startFloor(ready.floor);
  try {
    const b = await measure(broker, sim, ready.tokens, { seconds, connections });
    const f = await measure(floor, sim, ready.tokens, { seconds, connections });
    const n = (x, d = 1) => x.toFixed(d);
    const pair = (x, y) => `${x} / ${y}`;
    const info = (metric, value) => ({ metric, value, target: "", ok: null });
    const growth = b.rssAfter - b.rssBefore;
    return [
      info(`${seconds} s per target, ${connections} connections; values are broker / floor`, ""),
      info("requests/s", pair(n(b.rps, 0), n(f.rps, 0))),
      { metric: "throughput: broker ÷ floor", value: n(b.rps / f.rps, 2), target: "≥ 0.75", ok: b.rps / f.rps >= 0.75 },
      info("latency p50 (ms)", pair(n(b.p50), n(f.p50))),
      info("latency p99 (ms)", pair(n(b.p99), n(f.p99))),
      info("answers 2xx / other", pair(`${b.ok}/${b.failed}`, `${f.ok}/${f.failed}`)),
      info("CPU ms per request", pair(n(b.cpuPerRequest, 3), n(f.cpuPerRequest, 3))),
      { metric: "upstream requests per exchange (broker)", value: n(b.upstreamPerExchange, 3), target: "1", ok: Math.abs(b.upstreamPerExchange - 1) < 0.001 },
      info("upstream requests other than mints (broker)", String(b.otherUpstream)),
      info("App JWTs signed / JWKS fetches during the run (broker)", `${b.appJwts} / ${b.jwks}`),
      info("RSS at start (MB)", pair(n(b.rssStart), n(f.rssStart))),
      info("RSS after warm-up → after run (MB)", pair(`${n(b.rssBefore)}→${n(b.rssAfter)}`, `${n(f.rssBefore)}→${n(f.rssAfter)}`)),
      { metric: "broker RSS growth during the run (MB)", value: n(growth), target: "< 30", ok: growth < 30 },
    ];
  } finally {
    broker.stop();
    floor.stop();
    sim.send("exit");
  }
}
