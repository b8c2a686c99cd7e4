// Scenario `releases`: fresh GET /releases crawls, on loopback (each upstream request delayed
// 30 ms by the simulator, which runs in this process) and over an emulated link (simulator/link.ts:
// no added delay, the link's round trip, bandwidth and connection set-up instead; the simulator and
// the link's relay in a process of their own, bench/releases-simulator-process.js), for two fleets:
//   20 installations × 50 repositories, the broker in this process (issue 5: ≤ 65 upstream
//   requests, ≤ 0.6 s on loopback; a cached answer ≤ 5 ms), and
//   1 installation × 5,000 selected repositories, a new broker process per crawl (as after a
//   deploy; the mint's answer lists all 5,000, GitHub's full repository object each).
// Then, on loopback, under GitHub's rate limit (issue 28): a stale answer and a 503 with nothing
// cached, each as fast as a cached answer.
// Beside each: the peer, what a user writes with @octokit/graphql (bench/peer-crawl.js), run in the
// same way; over the link the bytes each crawl put on the wire (both directions, link.stats) and
// the link's floor for the crawl.
//
// The floor of a fresh crawl (issue 28): its chain of round trips plus its bytes ÷ bandwidth.
// A crawl cannot do with fewer than 4 round trips in a row: one to open a connection (TCP's
// handshake; every further connection can be opened beside it), then GET /app/installations (the
// installation ids), then the mints (all installations at once; each mint's answer names the
// selected repositories), then the GraphQL queries for the releases (all at once; the count check
// goes beside them). Then the bytes: each direction carries at most `mbit`, the two at the same time,
// so the larger of the two (the answers) ÷ bandwidth, with the bytes the crawl actually put on the
// wire (link.stats). So floor = 4 × RTT + max(bytes up, bytes down) × 8 ÷ bandwidth; it takes
// the bytes as they were: their own target (≤ 1.5 MB per 5,000 repositories) says whether there
// were too many.
import { execFileSync, fork } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { createSimulator, linkFloorMs } from "../../build/simulator/index.js";
import { spawnBroker } from "../broker-process.js";
import { appJwt, peerCrawl } from "../peer-crawl.js";
import { INSTALLATIONS, LARGE, REPOSITORIES, seed } from "../releases-fleet.js";
import { ask, processTimes } from "../token-support.js";
import { bytesSince, linkName, median, megabytes, percentile, seconds, startBroker, timed } from "../support.js";

const LATENCY_MS = 30;
const FRESH_RUNS = 5;
// More runs than 3: one 1 × 5,000 crawl over the link moved from 0.45 to 0.80 s between runs on
// this shared 2-core machine (the same build, 15 runs). The 20 × 50 crawls over the link stop at
// 5 (with the warm-up, 606 of the App's 900 REST points a minute; the peer's crawl needs 101 more).
const LINK_RUNS = 5;
const LARGE_RUNS = 7;
const CACHED_CALLS = 50;
const STALE_CALLS = 50;
const CRAWL_ROUND_TRIPS = 4;
const SECRET = "bench-secret-0123456789abcdef0123456";

export const description = `fresh GET /releases, ${INSTALLATIONS} installations × ${REPOSITORIES} repositories and 1 × ${LARGE}, on loopback (${LATENCY_MS} ms per upstream request) and over the link; the peer: a plain @octokit/graphql crawl`;

const envOf = (sim, app) => ({
  HOST_APP_ID: String(app.id),
  HOST_APP_PRIVATE_KEY: app.privateKeyPem,
  HOST_API_BASE: sim.apiBase,
  PROCESS_TRIGGER_SECRET: SECRET,
  RELEASES_MAX_REPOSITORIES: String(LARGE),
});

// Timed: the request until the whole body has arrived. Parsing it is the client's business.
async function get(url) {
  const response = await fetch(`${url}/releases`, { headers: { authorization: `Bearer ${SECRET}` } });
  return { status: response.status, text: await response.text() };
}
function check({ status, text }, repositories) {
  if (status !== 200) throw new Error(`GET /releases answered ${status} ${text}`);
  const body = JSON.parse(text);
  if (repositories !== undefined && (body.cached || body.truncated || body.repos.length !== repositories)) throw new Error("fresh crawl: unexpected aggregate");
  return body;
}

/**
 * Fresh crawls, a new broker each (no cache, no App JWT yet): `start(env)` starts it (in this
 * process or its own). The first `warmUps` are not kept (JIT, the simulator's schema; over the
 * link, the simulator's new process: GitHub is warm).
 */
async function freshCrawls(platform, app, { runs, warmUps, repositories, start }) {
  const fresh = [];
  for (let i = 0; i < runs + warmUps; i += 1) {
    // Cold connections too: a new broker in this process would otherwise find the last one's
    // connections still open in the shared pool (kept 4 s) and skip their handshakes.
    if (platform.linked) {
      await platform.drop();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const broker = await start(envOf(platform, app));
    let answer;
    let ms;
    let bytes;
    let cpu;
    try {
      await platform.clear();
      const before = platform.linked ? await platform.linkStats() : undefined;
      const simCpu = platform.cpuMs();
      // A broker in this process: this process's CPU (the client's too; with a local simulator, its too).
      const brokerCpuMs = broker.cpuMs ?? ownCpuMs;
      const brokerCpu = brokerCpuMs();
      ({ result: answer, ms } = await timed(() => get(broker.url)));
      bytes = before ? bytesSince({ stats: await platform.linkStats() }, before) : undefined;
      // The simulator's process (with the link's relay; in this process, the client's too), and the broker's own when it has a process.
      cpu = { sim: platform.cpuMs() - simCpu, broker: brokerCpuMs() - brokerCpu };
    } finally {
      await (broker.close ?? broker.stop)();
    }
    check(answer, repositories);
    if (i < warmUps) continue;
    const requests = await platform.requests();
    const count = (pattern) => requests.filter((r) => pattern.test(r)).length;
    fresh.push({
      ms,
      bytes,
      cpu,
      upstream: requests.length,
      breakdown: [/^GET \/app\/installations$/, /^POST \/app\/installations\/\d+\/access_tokens$/, /^GET \/installation\/repositories$/, /^POST \/graphql$/].map(count),
    });
  }
  return fresh;
}

/** This process's CPU milliseconds so far. */
const ownCpuMs = () => (({ user, system }) => (user + system) / 1000)(process.cpuUsage());

/** The simulator in this process (the loopback runs). */
function localPlatform(sim) {
  return {
    apiBase: sim.apiBase,
    linked: Boolean(sim.link),
    drop: async () => sim.link.dropConnections(),
    linkStats: async () => ({ ...sim.link.stats }),
    clear: async () => sim.clearRequests(),
    requests: async () => sim.requests.map((r) => `${r.method} ${r.path}`),
    cpuMs: ownCpuMs,
  };
}

/**
 * The simulator behind the link in a process of its own (bench/releases-simulator-process.js), as
 * GitHub is on other machines: its work (graphql-js executing the queries, 26 MB of JSON built and
 * compressed per 1 × 5,000 mint) runs beside the broker's on this machine's two cores, not
 * between its steps on one thread.
 */
async function remotePlatform(link) {
  const child = fork(fileURLToPath(new URL("../releases-simulator-process.js", import.meta.url)), [], { stdio: "inherit", env: { ...process.env, BENCH_RELEASES_LINK: JSON.stringify(link) } });
  const ready = await ask(child, null, "ready");
  return {
    apiBase: ready.apiBase,
    apps: ready.apps,
    linked: true,
    drop: () => ask(child, { type: "drop" }, "dropped"),
    linkStats: async () => (await ask(child, { type: "stats" }, "stats")).stats,
    clear: () => ask(child, { type: "clear" }, "cleared"),
    requests: async () => (await ask(child, { type: "requests" }, "requests")).requests,
    cpuMs: () => processTimes(child.pid).cpuMs,
    close: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.send({ type: "exit" });
      await exited;
    },
  };
}

/**
 * What reading the 1 × 5,000 mint answer costs at the least on this machine: a new process (as
 * the fresh crawl's broker is) gunzips it, decodes it and JSON.parses it whole, nothing else; ms,
 * median of 3. Any broker must spend about this before it knows every repository's name, so on
 * 2 cores shared with the simulator and the relay a crawl cannot beat the round trips plus this.
 */
async function readingFloor(sim, app) {
  const jwt = await appJwt(app.id, app.privateKeyPem);
  const headers = { authorization: `Bearer ${jwt}`, accept: "application/vnd.github+json", "user-agent": "bench", "accept-encoding": "gzip" };
  const installations = await (await request(`${sim.apiBase}/app/installations`, { headers: { ...headers, "accept-encoding": "identity" } })).body.json();
  const minted = await request(`${sim.apiBase}/app/installations/${installations[0].id}/access_tokens`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: "{}" });
  const gzipped = Buffer.from(await minted.body.arrayBuffer());
  if (minted.headers["content-encoding"] !== "gzip") throw new Error("CPU floor: the mint answer was not gzip-compressed");
  const dir = mkdtempSync(join(tmpdir(), "bench-floor-"));
  try {
    const file = join(dir, "mint.json.gz");
    writeFileSync(file, gzipped);
    const program = `const t0 = performance.now(); const value = JSON.parse(require("node:zlib").gunzipSync(require("node:fs").readFileSync(process.argv[1])).toString("utf8")); if (value.repositories.length !== ${LARGE}) process.exit(1); console.log(performance.now() - t0);`;
    const times = [0, 1, 2].map(() => Number(execFileSync(process.execPath, ["-e", program, file], { encoding: "utf8" }).trim()));
    return median(times);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The peer's crawl, timed, its bytes counted over the link. */
async function peer(platform, app, repositories) {
  if (platform.linked) {
    await platform.drop(); // cold, as ours
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const before = platform.linked ? await platform.linkStats() : undefined;
  const { result, ms } = await timed(() => peerCrawl({ apiBase: platform.apiBase, appId: app.id, privateKeyPem: app.privateKeyPem }));
  if (result.repositories !== repositories) throw new Error(`peer crawl: saw ${result.repositories} repositories, not ${repositories}`);
  return { ms, bytes: before ? bytesSince({ stats: await platform.linkStats() }, before) : undefined };
}

const inProcess = (env) => startBroker(env);
const ownProcess = (env) => spawnBroker(env);

/** Runs `call`, saying on stderr how long it took (the bench's progress). */
async function step(name, call) {
  const started = performance.now();
  const result = await call();
  process.stderr.write(`bench: releases: ${name}: ${seconds(performance.now() - started)}\n`);
  return result;
}

export async function run({ link } = {}) {
  const loop = await createSimulator();
  const linked = link ? await remotePlatform(link) : undefined;
  const apps = { loop: seed(loop), linked: linked?.apps };
  const local = localPlatform(loop);
  loop.latencyMs = LATENCY_MS;
  try {
    // 20 × 50.
    const fleetLoop = await step("fleetLoop", () => freshCrawls(local, apps.loop.fleet, { runs: FRESH_RUNS, warmUps: 1, repositories: INSTALLATIONS * REPOSITORIES, start: inProcess }));
    const cachedTimes = await step("cachedTimes", () => cachedAnswers(loop, apps.loop.fleet));
    const fleetLink = linked ? await step("fleetLink", () => freshCrawls(linked, apps.linked.fleet, { runs: LINK_RUNS, warmUps: 1, repositories: INSTALLATIONS * REPOSITORIES, start: inProcess })) : [];
    const fleetPeerLoop = await step("fleetPeerLoop", () => peer(local, apps.loop.fleet, INSTALLATIONS * REPOSITORIES));
    const fleetPeerLink = linked ? await step("fleetPeerLink", () => peer(linked, apps.linked.fleet, INSTALLATIONS * REPOSITORIES)) : undefined;

    // 1 × 5,000.
    const largeLoop = await step("largeLoop", () => freshCrawls(local, apps.loop.large, { runs: LARGE_RUNS, warmUps: 1, repositories: LARGE, start: ownProcess }));
    const largeLink = linked ? await step("largeLink", () => freshCrawls(linked, apps.linked.large, { runs: LARGE_RUNS, warmUps: 1, repositories: LARGE, start: ownProcess })) : [];
    const largePeerLoop = await step("largePeerLoop", () => peer(local, apps.loop.large, LARGE));
    const largePeerLink = linked ? await step("largePeerLink", () => peer(linked, apps.linked.large, LARGE)) : undefined;

    const largeCpuFloor = await step("largeCpuFloor", () => readingFloor(loop, apps.loop.large));

    // Last: it leaves the fleet App under a (simulated) rate limit.
    const limited = await step("rateLimited", () => rateLimitedAnswers(loop, apps.loop.fleet));

    const wall = (fresh) => median(fresh.map((f) => f.ms));
    const upstream = Math.max(...fleetLoop.map((f) => f.upstream));
    const [listing, mints, repoListings, queries] = fleetLoop[0].breakdown;
    const cachedMedian = median(cachedTimes);
    const fleetWall = wall(fleetLoop);
    const rows = [
      { metric: `20×50 fresh crawl: upstream requests`, loopback: String(upstream), link: linked ? String(Math.max(...fleetLink.map((f) => f.upstream))) : "", target: "≤ 65", ok: linked ? [upstream <= 65, fleetLink.every((f) => f.upstream <= 65)] : upstream <= 65 },
      { metric: "  installations listing + mints + repository listings or counts + GraphQL", loopback: `${listing} + ${mints} + ${repoListings} + ${queries}`, target: "", ok: null },
      { metric: `20×50 fresh crawl: wall time (median of ${FRESH_RUNS} loopback, ${LINK_RUNS} link)`, loopback: seconds(fleetWall), ...linkColumns(link, fleetLink), target: linked ? "≤ 0.6 s / ≤ 1.5 × floor" : "≤ 0.6 s", ok: linked ? [fleetWall <= 600, ratioOf(link, fleetLink) <= 1.5] : fleetWall <= 600 },
      { metric: `  slowest`, loopback: seconds(Math.max(...fleetLoop.map((f) => f.ms))), link: linked ? seconds(Math.max(...fleetLink.map((f) => f.ms))) : "", target: "", ok: null },
      ...(linked ? [{ metric: "  CPU per crawl over the link: this process (broker, client) / the simulator's (with the relay), median", link: cpuText(fleetLink), target: "", ok: null }] : []),
      ...bytesRows(linked, link, fleetLink, fleetPeerLink, null),
      peerRow("20×50", fleetWall, fleetPeerLoop, linked ? wall(fleetLink) : undefined, fleetPeerLink, null),
      { metric: `20×50 cached answer: median of ${CACHED_CALLS}`, loopback: `${cachedMedian.toFixed(2)} ms`, target: "≤ 5 ms", ok: cachedMedian <= 5 },
      { metric: `  p95 of ${CACHED_CALLS}`, loopback: `${percentile(cachedTimes, 95).toFixed(2)} ms`, target: "", ok: null },
      { metric: "rate-limited, stale: first answer (its refresh meets the 403)", loopback: `${limited.firstStaleMs.toFixed(2)} ms`, target: "", ok: null },
      { metric: `rate-limited, stale answer: median of ${STALE_CALLS}`, loopback: `${median(limited.staleTimes).toFixed(2)} ms`, target: "≤ 5 ms", ok: median(limited.staleTimes) <= 5 },
      { metric: `rate-limited, nothing cached, 503: median of ${STALE_CALLS}`, loopback: `${median(limited.refusedTimes).toFixed(2)} ms`, target: "≤ 5 ms", ok: median(limited.refusedTimes) <= 5 },
    ];
    const largeWall = wall(largeLoop);
    // The link's floor with the reading's CPU in place of the bytes' time when it is longer (the
    // two overlap: the answer is read as it arrives).
    const withCpu = (cpuMs) => {
      const roundTrips = linkFloorMs(link, { roundTrips: CRAWL_ROUND_TRIPS, bytes: 0 });
      return roundTrips + Math.max(cpuMs, floorOf(link, largeLink) - roundTrips);
    };
    const [, largeMints, largeListings, largeQueries] = largeLoop[0].breakdown;
    rows.push(
      { metric: `1×5,000 fresh crawl: wall time (median of ${LARGE_RUNS}, new process each)`, loopback: seconds(largeWall), ...linkColumns(link, largeLink), target: linked ? "- / ≤ 1.5 × floor" : "", ok: linked ? [null, ratioOf(link, largeLink) <= 1.5] : null },
      { metric: "  upstream: installations + mints + listings + GraphQL", loopback: `1 + ${largeMints} + ${largeListings} + ${largeQueries}`, link: linked ? ((b) => `1 + ${b[1]} + ${b[2]} + ${b[3]}`)(largeLink[0].breakdown) : "", target: "", ok: null },
      {
        metric: "  CPU per crawl: broker process / simulator's (loopback: this process, with the client; link: its own, with the relay), median",
        loopback: cpuText(largeLoop),
        link: linked ? cpuText(largeLink) : "",
        target: "",
        ok: null,
      },
      {
        metric: "  CPU floor: a new process reading the mint answer whole (gunzip, decode, JSON.parse; median of 3)",
        loopback: `${largeCpuFloor.toFixed(0)} ms`,
        link: linked ? `floor with it: ${seconds(withCpu(largeCpuFloor))} (÷ ${(wall(largeLink) / withCpu(largeCpuFloor)).toFixed(2)})` : "",
        target: "",
        ok: null,
      },
      ...bytesRows(linked, link, largeLink, largePeerLink, 1.5e6),
      peerRow("1×5,000", largeWall, largePeerLoop, linked ? wall(largeLink) : undefined, largePeerLink, 5),
    );
    return rows;
  } finally {
    await loop.close();
    await linked?.close();
  }
}

/** Cached answers: one broker with an in-memory LEGACY_QUOTA_KV, warmed by one crawl. */
async function cachedAnswers(sim, app) {
  const broker = await startBroker({ ...envOf(sim, app), LEGACY_QUOTA_KV: "memory://" });
  const times = [];
  try {
    check(await get(broker.url));
    sim.clearRequests();
    for (let i = 0; i < CACHED_CALLS; i += 1) {
      const { result, ms } = await timed(() => get(broker.url));
      if (!check(result).cached) throw new Error("cached call: not served from the cache");
      times.push(ms);
    }
    if (sim.requests.length !== 0) throw new Error("cached calls reached the platform");
  } finally {
    await broker.close();
  }
  return times;
}

/**
 * Under GitHub's primary rate limit (issue 28: the installation listing answers 403, reset in
 * 10 min): a broker whose aggregate is past its 1 s TTL answers it stale at once; one without
 * an aggregate answers 503 platform_rate_limited at once. Neither reaches the platform again.
 */
async function rateLimitedAnswers(sim, app) {
  const env = envOf(sim, app);
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
  return { firstStaleMs, staleTimes, refusedTimes };
}

const cpuText = (fresh) => `${median(fresh.map((f) => f.cpu.broker)).toFixed(0)} / ${median(fresh.map((f) => f.cpu.sim)).toFixed(0)} ms`;

/** The crawl's floor on the link (see the top of this file), from its median bytes. */
function floorOf(link, fresh) {
  const bytes = median(fresh.map((f) => Math.max(f.bytes.up, f.bytes.down)));
  return linkFloorMs(link, { roundTrips: CRAWL_ROUND_TRIPS, bytes });
}
const ratioOf = (link, fresh) => median(fresh.map((f) => f.ms)) / floorOf(link, fresh);

function linkColumns(link, fresh) {
  if (!link) return {};
  return { link: seconds(median(fresh.map((f) => f.ms))), floor: seconds(floorOf(link, fresh)), ratio: ratioOf(link, fresh).toFixed(2) };
}

function bytesRows(linked, link, fresh, peerRun, target) {
  if (!linked) return [];
  const total = median(fresh.map((f) => f.bytes.up + f.bytes.down));
  const up = median(fresh.map((f) => f.bytes.up));
  return [
    {
      metric: `  bytes on the wire per crawl, up + down (${linkName(link)} link)`,
      link: `${megabytes(total)} (${megabytes(up)} up)`,
      target: target === null ? "" : `- / ≤ ${megabytes(target)}`,
      ok: target === null ? null : [null, total <= target],
    },
    { metric: "  bytes on the wire, the peer's crawl", link: megabytes(peerRun.bytes.up + peerRun.bytes.down), target: "", ok: null },
  ];
}

function peerRow(label, loopMs, peerLoop, linkMs, peerLink, target) {
  const speedup = (ours, theirs) => `${(theirs.ms / 1000).toFixed(3)} s (${(theirs.ms / ours).toFixed(1)}× ours)`;
  const linkSpeedup = peerLink ? peerLink.ms / linkMs : undefined;
  return {
    metric: `  peer: @octokit/graphql crawl, page after page (${label})`,
    loopback: speedup(loopMs, peerLoop),
    link: peerLink ? speedup(linkMs, peerLink) : "",
    target: target === null ? "" : `- / ≥ ${target}× ours`,
    ok: target === null || linkSpeedup === undefined ? null : [null, linkSpeedup >= target],
  };
}
