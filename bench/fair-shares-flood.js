// A flood of one owner against another owner's quiet jobs (issue 37, item 4): `node
// bench/fair-shares-flood.js` after `npm run build`. One built broker (BENCH_BROKER_MAIN: another
// build's main.js, to measure another version) against the simulator with GitHub's limits on (900
// REST points a minute per App, a mint 5). For FLOOD_SECONDS (default 20) FLOOD_SENDERS (default
// 32) senders of flood-org/app each send /token after /token, every one with a fresh valid OIDC
// token of their repository (each mints once); meanwhile octo-org/app sends QUIET_RATE (default 4)
// jobs a second. Printed: the quiet owner's answers (by status and code) and its latency p50/p99
// against a quiet baseline taken before the flood, the flood's answers, the App points each owner
// spent at the platform and what the platform refused.
import { createSimulator } from "../build/simulator/index.js";
import { spawnBroker } from "./broker-process.js";

const FLOOD_SECONDS = Number(process.env.FLOOD_SECONDS || 20);
const FLOOD_SENDERS = Number(process.env.FLOOD_SENDERS || 32);
const QUIET_RATE = Number(process.env.QUIET_RATE || 4);
const PERMISSIONS = { contents: "write", pull_requests: "write", metadata: "read" };

const sim = await createSimulator();
const app = sim.createApp();
const installations = {
  "octo-org": sim.addInstallation({ appId: app.id, account: "octo-org", permissions: PERMISSIONS, repositories: ["app"] }),
  "flood-org": sim.addInstallation({ appId: app.id, account: "flood-org", permissions: PERMISSIONS, repositories: ["app"] }),
};
const broker = await spawnBroker({
  HOST_APP_ID: String(app.id),
  HOST_APP_PRIVATE_KEY: app.privateKeyPem,
  HOST_API_BASE: sim.apiBase,
  HOST_OIDC_ISSUER: sim.oidc.issuer,
  TOKEN_POLICY: "off",
  LOG_LEVEL: "warn",
});

async function job(repository) {
  const oidcToken = await sim.oidc.sign({ repository });
  const [owner, repo] = repository.split("/");
  const started = performance.now();
  try {
    const res = await fetch(`${broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken, owner, repo }) });
    const body = await res.json().catch(() => ({}));
    return { answer: res.status === 200 ? "200" : `${res.status} ${body.error}`, ms: performance.now() - started };
  } catch (error) {
    return { answer: `network ${error.cause?.code ?? error.name}`, ms: performance.now() - started };
  }
}

/** `rate` jobs a second of `repository` for `seconds`, each on its own (not waiting for the one before). */
async function steady(repository, rate, seconds) {
  const runs = [];
  for (let i = 0; i < rate * seconds; i += 1) {
    runs.push(job(repository));
    await new Promise((resolve) => setTimeout(resolve, 1000 / rate));
  }
  return Promise.all(runs);
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const tally = (results) => Object.fromEntries([...new Set(results.map((r) => r.answer))].map((answer) => [answer, results.filter((r) => r.answer === answer).length]));
const summary = (results) => ({ answers: tally(results), ok: `${((100 * results.filter((r) => r.answer === "200").length) / results.length).toFixed(1)} %`, p50: Math.round(percentile(results.map((r) => r.ms), 50)), p99: Math.round(percentile(results.map((r) => r.ms), 99)) });
/** The App's points an owner spent at the platform: its installation lookups (1) and its mints (5). */
const pointsOf = (owner) =>
  sim.requests
    .filter((r) => r.auth.kind === "app" && (r.path === `/repos/${owner}/app/installation` || r.path === `/app/installations/${installations[owner]}/access_tokens`))
    .reduce((sum, r) => sum + (r.method === "GET" ? 1 : 5), 0);

// The quiet baseline (its installation's lookup cached after the first job).
const baseline = await steady("octo-org/app", QUIET_RATE, 5);
sim.clearRequests();
const refusedBefore = sim.limits.refused.points;

const until = Date.now() + FLOOD_SECONDS * 1000;
const flooded = [];
const senders = Array.from({ length: FLOOD_SENDERS }, async () => {
  while (Date.now() < until) {
    const result = await job("flood-org/app");
    flooded.push(result);
    // A refusal names its wait; a sender at the highest rate it can reach does not honour it.
  }
});
const quiet = await steady("octo-org/app", QUIET_RATE, FLOOD_SECONDS);
await Promise.all(senders);

console.log(JSON.stringify({
  broker: process.env.BENCH_BROKER_MAIN || "build/server/main.js",
  seconds: FLOOD_SECONDS,
  quietBaseline: summary(baseline),
  quietDuringFlood: summary(quiet),
  flood: { ...summary(flooded), requests: flooded.length },
  appPointsAtPlatform: { "octo-org": pointsOf("octo-org"), "flood-org": pointsOf("flood-org") },
  platformRefusedPoints: sim.limits.refused.points - refusedBefore,
}, null, 2));
await broker.stop();
await sim.close();
