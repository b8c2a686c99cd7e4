// `node bench/token-redis-stopped.js [requests]` (after `npx tsc -p tsconfig.build.json`;
// redis-server on PATH): the built broker with SERVICE_JWKS_CACHE, LEGACY_QUOTA_KV and WEBHOOK_QUEUE
// on a redis-server of its own, and the simulator; one /token with Redis up, then Redis stopped
// (SIGTERM: its port closed, connections refused, not black-holed) and `requests` (default 20)
// /token one after the other. Prints each one's wall time, the median of those after the first,
// and how the broker's store calls ended meanwhile (`tokensmith_store_calls_total`, where the
// build has it) (docs/operations.md#redis-outages). BENCH_BROKER_MAIN runs another build's broker.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { tokenFixture } from "../build/test/support/fixtures.js";

const count = Number(process.argv[2] ?? 20);
const MAIN = process.env.BENCH_BROKER_MAIN || fileURLToPath(new URL("../build/server/main.js", import.meta.url));

const freePort = () =>
  new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port: free } = server.address();
      server.close(() => resolve(free));
    });
  });
const port = await freePort();
const adminPort = await freePort();
const redis = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
const redisUrl = `redis://127.0.0.1:${port}`;
for (let i = 0; ; i += 1) {
  const up = await new Promise((resolve) => {
    const ping = spawn("redis-cli", ["-p", String(port), "ping"]);
    let out = "";
    ping.stdout.on("data", (d) => (out += d));
    ping.on("close", () => resolve(out.trim() === "PONG"));
  });
  if (up) break;
  if (i > 100) throw new Error("redis-server did not start");
  await new Promise((r) => setTimeout(r, 50));
}

const fx = await tokenFixture();
const env = { ...fx.env, SERVICE_JWKS_CACHE: redisUrl, LEGACY_QUOTA_KV: redisUrl, WEBHOOK_QUEUE: `${redisUrl}?prefix=bench-stopped`, HOST_WEBHOOK_SECRET: "bench-stopped-webhook-secret-0123456789", SENDER_REQUESTS_PER_SECOND: "0", ADMIN_PORT: String(adminPort), ADMIN_HOST: "127.0.0.1" };
const broker = spawn(process.execPath, [MAIN], { env: { PATH: process.env.PATH, PORT: "0", ...env }, stdio: ["ignore", "pipe", "inherit"] });
const brokerPort = await new Promise((resolve, reject) => {
  broker.once("exit", (code) => reject(new Error(`broker exited with ${code}`)));
  let pending = "";
  broker.stdout.on("data", (chunk) => {
    const parts = (pending + chunk.toString()).split("\n");
    pending = parts.pop();
    for (const line of parts) {
      try {
        const entry = JSON.parse(line);
        if (entry.msg === "tokensmith broker listening") resolve(entry.port);
      } catch {}
    }
  });
});

async function mint() {
  const oidcToken = await fx.sim.oidc.sign();
  const started = performance.now();
  const response = await fetch(`http://127.0.0.1:${brokerPort}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ owner: "octo-org", repo: "app", oidcToken }) });
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started };
}

/** tokensmith_store_calls_total by outcome (empty where the build has no such metric). */
async function storeCalls() {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  return Object.fromEntries([...text.matchAll(/^tokensmith_store_calls_total\{outcome="(\w+)"\} (\d+)$/gm)].map(([, outcome, n]) => [outcome, Number(n)]));
}

const warm = await mint();
process.stdout.write(`Redis up: /token ${warm.status} in ${warm.ms.toFixed(1)} ms\n`);
const exited = new Promise((resolve) => redis.once("exit", resolve));
redis.kill("SIGTERM");
await exited;
const before = await storeCalls();
const times = [];
for (let i = 0; i < count; i += 1) {
  const answer = await mint();
  if (answer.status !== 200) throw new Error(`/token answered ${answer.status}`);
  times.push(answer.ms);
}
const after = await storeCalls();
const rest = times.slice(1).sort((a, b) => a - b);
const median = rest[Math.floor(rest.length / 2)];
process.stdout.write(`Redis stopped: ${times.map((t) => t.toFixed(0)).join(" ")} ms\n`);
process.stdout.write(`first ${times[0].toFixed(0)} ms; median of the next ${rest.length}: ${median.toFixed(1)} ms (max ${rest[rest.length - 1].toFixed(0)} ms)\n`);
process.stdout.write(`store calls meanwhile: ${Object.keys(after).length === 0 ? "not counted by this build" : Object.keys(after).map((outcome) => `${outcome} ${after[outcome] - (before[outcome] ?? 0)}`).join(", ")}\n`);
broker.kill("SIGTERM");
await new Promise((resolve) => broker.once("exit", resolve));
await fx.sim.close();
