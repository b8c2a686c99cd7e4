// Scenario `releases`: GET /releases over a fleet of 20 installations × 50 repositories, each
// upstream request delayed 30 ms by the simulator. Targets (issue 5): a fresh crawl in ≤ 65
// upstream requests and ≤ 0.6 s; a cached answer in ≤ 5 ms (median). Issue 28: under the platform's
// rate limit, a stale answer (past the TTL) and a 503 with nothing cached as fast as a cached one.
import { createSimulator } from "../../build/simulator/index.js";
import { median, percentile, startBroker, timed } from "../support.js";

const INSTALLATIONS = 20;
const REPOSITORIES = 50;
const LATENCY_MS = 30;
const FRESH_RUNS = 5;
const CACHED_CALLS = 50;
const STALE_CALLS = 50;
const SECRET = "bench-secret";

export const description = `GET /releases, ${INSTALLATIONS} installations × ${REPOSITORIES} repositories, ${LATENCY_MS} ms per upstream request`;

export async function run() {
  const sim = await createSimulator();
  const app = sim.createApp();
  for (let i = 0; i < INSTALLATIONS; i += 1) {
    const account = `bench-org-${String(i).padStart(2, "0")}`;
    const repositories = Array.from({ length: REPOSITORIES }, (_, j) => `repo-${String(j).padStart(2, "0")}`);
    sim.addInstallation({ appId: app.id, account, permissions: { contents: "write", metadata: "read" }, repositories });
    // Two in three repositories have releases; some newest ones are prereleases or drafts.
    repositories.forEach((name, j) => {
      if (j % 3 === 2) return;
      sim.releases.add(`${account}/${name}`, { tagName: "v1.0.0", createdAt: "2026-01-01T00:00:00Z" });
      if (j % 5 === 0) sim.releases.add(`${account}/${name}`, { tagName: "v1.1.0-rc.1", isPrerelease: true, createdAt: "2026-02-01T00:00:00Z" });
      if (j % 7 === 0) sim.releases.add(`${account}/${name}`, { tagName: "v2.0.0", isDraft: true, createdAt: "2026-03-01T00:00:00Z" });
    });
  }
  sim.latencyMs = LATENCY_MS;
  const env = {
    HOST_APP_ID: String(app.id),
    HOST_APP_PRIVATE_KEY: app.privateKeyPem,
    HOST_API_BASE: sim.apiBase,
    PROCESS_TRIGGER_SECRET: SECRET,
  };
  // Timed: the request until the whole body has arrived. Parsing it is the client's business.
  const get = async (url) => {
    const response = await fetch(`${url}/releases`, { headers: { authorization: `Bearer ${SECRET}` } });
    return { status: response.status, text: await response.text() };
  };
  const check = ({ status, text }) => {
    if (status !== 200) throw new Error(`GET /releases answered ${status} ${text}`);
    return JSON.parse(text);
  };

  try {
    // Fresh crawls: a new broker each time (no cache, no App JWT yet), as after a deploy. The
    // first, untimed, warms up this process (JIT, the simulator's schema).
    const fresh = [];
    for (let i = 0; i <= FRESH_RUNS; i += 1) {
      const broker = await startBroker({ ...env });
      sim.clearRequests();
      const { result: answer, ms } = await timed(() => get(broker.url));
      await broker.close();
      const result = check(answer);
      if (i === 0) continue;
      if (result.cached || result.truncated || result.repos.length !== INSTALLATIONS * REPOSITORIES) throw new Error("fresh crawl: unexpected aggregate");
      const count = (pattern) => sim.requests.filter((r) => pattern.test(`${r.method} ${r.path}`)).length;
      fresh.push({
        ms,
        upstream: sim.requests.length,
        breakdown: [/^GET \/app\/installations$/, /^POST \/app\/installations\/\d+\/access_tokens$/, /^GET \/installation\/repositories$/, /^POST \/graphql$/].map(count),
      });
    }

    // Cached answers: one broker with an in-memory LEGACY_QUOTA_KV, warmed by one crawl.
    const broker = await startBroker({ ...env, LEGACY_QUOTA_KV: "memory://" });
    const cachedTimes = [];
    try {
      check(await get(broker.url));
      sim.clearRequests();
      for (let i = 0; i < CACHED_CALLS; i += 1) {
        const { result, ms } = await timed(() => get(broker.url));
        if (!check(result).cached) throw new Error("cached call: not served from the cache");
        cachedTimes.push(ms);
      }
      if (sim.requests.length !== 0) throw new Error("cached calls reached the platform");
    } finally {
      await broker.close();
    }

    // Under GitHub's primary rate limit (the installation listing answers 403, reset in 10 min):
    // a broker whose aggregate is past its 1 s TTL answers it stale; one without answers 503.
    const limited = await startBroker({ ...env, LEGACY_QUOTA_KV: "memory://", RELEASES_CACHE_TTL_SECONDS: "1" });
    const none = await startBroker({ ...env });
    const staleTimes = [];
    const refusedTimes = [];
    let firstStaleMs = 0;
    try {
      check(await get(limited.url));
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const reset = String(Math.ceil(Date.now() / 1000) + 600);
      sim.faults.add({ method: "GET", path: "/app/installations", respond: { status: 403, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": reset }, body: { message: "API rate limit exceeded" } } });
      // The first meets the limit (its refresh reaches the platform once); the others know it.
      const first = await timed(() => get(limited.url));
      if (!check(first.result).stale) throw new Error("stale call: not stale");
      firstStaleMs = first.ms;
      sim.clearRequests();
      for (let i = 0; i < STALE_CALLS; i += 1) {
        const { result, ms } = await timed(() => get(limited.url));
        if (!check(result).stale) throw new Error("stale call: not stale");
        staleTimes.push(ms);
      }
      if ((await get(none.url)).status !== 503) throw new Error("no aggregate under a rate limit: not 503");
      sim.clearRequests();
      for (let i = 0; i < STALE_CALLS; i += 1) {
        const { result, ms } = await timed(() => get(none.url));
        if (result.status !== 503 || !result.text.includes("platform_rate_limited")) throw new Error(`refused call: ${result.status} ${result.text}`);
        refusedTimes.push(ms);
      }
      if (sim.requests.length !== 0) throw new Error("calls under a known rate limit reached the platform");
    } finally {
      sim.faults.clear();
      await limited.close();
      await none.close();
    }

    const upstream = Math.max(...fresh.map((f) => f.upstream));
    const freshMedian = median(fresh.map((f) => f.ms));
    const cachedMedian = median(cachedTimes);
    const [listing, mints, repoListings, queries] = fresh[0].breakdown;
    return [
      { metric: "fresh crawl: upstream requests", value: String(upstream), target: "≤ 65", ok: upstream <= 65 },
      { metric: "  installations listing + mints + repository listings or counts + GraphQL", value: `${listing} + ${mints} + ${repoListings} + ${queries}`, target: "", ok: null },
      { metric: `fresh crawl: wall time (median of ${FRESH_RUNS}, after 1 warm-up)`, value: `${(freshMedian / 1000).toFixed(3)} s`, target: "≤ 0.6 s", ok: freshMedian <= 600 },
      { metric: `fresh crawl: wall time (slowest of ${FRESH_RUNS})`, value: `${(Math.max(...fresh.map((f) => f.ms)) / 1000).toFixed(3)} s`, target: "", ok: null },
      { metric: `cached answer: median of ${CACHED_CALLS}`, value: `${cachedMedian.toFixed(2)} ms`, target: "≤ 5 ms", ok: cachedMedian <= 5 },
      { metric: `cached answer: p95 of ${CACHED_CALLS}`, value: `${percentile(cachedTimes, 95).toFixed(2)} ms`, target: "", ok: null },
      { metric: "rate-limited, stale: first answer (its refresh meets the 403)", value: `${firstStaleMs.toFixed(2)} ms`, target: "", ok: null },
      { metric: `rate-limited, stale answer: median of ${STALE_CALLS}`, value: `${median(staleTimes).toFixed(2)} ms`, target: "≤ 5 ms", ok: median(staleTimes) <= 5 },
      { metric: `rate-limited, nothing cached, 503: median of ${STALE_CALLS}`, value: `${median(refusedTimes).toFixed(2)} ms`, target: "≤ 5 ms", ok: median(refusedTimes) <= 5 },
    ];
  } finally {
    await sim.close();
  }
}
