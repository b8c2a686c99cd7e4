// Scenario `token`: POST /token under load. The broker (`build/server/main.js`, as `npm start`
// runs it), the platform simulator and a floor server each run as a process of their own on
// loopback; autocannon drives them in turn with valid OIDC tokens from a pre-signed pool.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { linkFloorMs } from "../../build/simulator/index.js";
import { spawnBroker as startBroker } from "../broker-process.js";
import { appJwt } from "../peer-crawl.js";
import { ask, loadToken as load, processTimes, startFloor, tokenSigner } from "../token-support.js";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export const description = "POST /token under autocannon (64 connections): broker vs a minimal floor server (fetch, and undici's request()), all against the simulator in its own process, on loopback and over the link; one exchange at a time; the peer: a mint per job";
/** One timed round against one target, the simulator's counters reset first. */
async function round(target, sim, tokens, options) {
  // Requests still in flight when the previous round stopped land within moments: let them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  // The simulator and this process (autocannon) collect the previous round's garbage now, so it
  // is not collected during this round: each round is measured apart from the one before it.
  await ask(sim, "reset", "reset");
  globalThis.gc?.();
  const before = processTimes(target.child.pid);
  const simBefore = processTimes(sim.pid);
  const run = await load(target.url, tokens, options);
  const after = processTimes(target.child.pid);
  const simAfter = processTimes(sim.pid);
  const { stats } = await ask(sim, "stats", "stats");
  return { ...run, cpuMs: after.cpuMs - before.cpuMs, simCpuMs: simAfter.cpuMs - simBefore.cpuMs, rssMb: after.rssMb, stats };
}

const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Totals over a target's rounds. */
function summarise(rounds, warm) {
  const sum = (pick) => rounds.reduce((total, r) => total + pick(r), 0);
  const exchanges = sum((r) => r.ok + r.failed);
  const mints = sum((r) => r.stats.mints);
  const readerMints = sum((r) => r.stats.readerMints ?? 0);
  return {
    rps: median(rounds.map((r) => r.rps)),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    ok: sum((r) => r.ok),
    failed: sum((r) => r.failed),
    cpuPerRequest: sum((r) => r.cpuMs) / Math.max(1, exchanges),
    simCpuPerRequest: sum((r) => r.simCpuMs) / Math.max(1, exchanges),
    // Every exchange mints exactly once; requests still in flight when a round stops were minted
    // but not counted by autocannon, so the mints are the true count of exchanges.
    // The broker's policy reader token (its own upkeep, minted once and kept) is counted apart.
    upstreamPerExchange: (sum((r) => r.stats.total) - readerMints) / Math.max(1, mints),
    readerMints,
    otherUpstream: sum((r) => r.stats.other),
    appJwts: Math.max(...rounds.map((r) => r.stats.appJwts)),
    jwks: sum((r) => r.stats.jwks),
    rssStart: warm.start,
    rssBefore: warm.after,
    rssAfter: rounds.at(-1).rssMb,
  };
}

/**
 * Warm-up at full load: fills the broker's caches (key set, App JWT, installation) and lets the
 * heap grow to its working size (it levels off within about ten seconds at 64 connections), so
 * "after − before" is growth during the measured rounds — what a leak would show — not start-up.
 */
async function warmUp(target, tokens, connections, seconds) {
  const start = processTimes(target.child.pid).rssMb;
  await load(target.url, tokens, { seconds, connections });
  return { start, after: processTimes(target.child.pid).rssMb };
}

/**
 * One measurement: the simulator (behind `link` when given), the broker and the floor server(s),
 * warm-ups, alternating rounds; then exchanges one at a time, and the peer's mints per job.
 */
async function measure({ link, seconds, connections, rounds: roundCount, warmUpSeconds, floorRequest: withFloorRequest }) {
  const sim = fork(here("../token-simulator-process.js"), [], {
    stdio: "inherit",
    execArgv: ["--expose-gc"],
    env: { ...process.env, ...(link ? { BENCH_TOKEN_LINK: JSON.stringify(link) } : {}) },
  });
  const ready = await ask(sim, null, "ready");
  const tokens = tokenSigner(ready.tokens[0], ready.oidcKeyPem);
  // BENCH_TOKEN_BROKER_ENV (JSON): settings for the broker on top of the simulator's (an experiment's, e.g.
  // {"UPSTREAM_MAX_CONCURRENCY":"1000"}); the table's figures are without it.
  const broker = await startBroker({ ...ready.env, ...(process.env.BENCH_TOKEN_BROKER_ENV ? JSON.parse(process.env.BENCH_TOKEN_BROKER_ENV) : {}) });
  const floor = await startFloor(ready.floor);
  // The same floor sending its mint with the broker's transport (undici's request(), not fetch):
  // the physical floor (what any broker must do, on the cheapest client), the one the target is on.
  const floorRequest = withFloorRequest ? await startFloor(ready.floor, "request") : undefined;
  try {
    // Rounds alternate broker and floor (and which of the two goes first), so drift in the
    // machine's other load or in the simulator falls on both alike; the ratio is the median of the
    // per-round ratios. This shared 2-core machine moves single rounds by ±0.2: five short pairs
    // give a steadier median than three long ones for the same 15 s per target.
    const pair = [["broker", broker], ["floor", floor], ...(floorRequest ? [["floorRequest", floorRequest]] : [])];
    const warm = {};
    for (const [name, target] of pair) warm[name] = await warmUp(target, tokens, connections, warmUpSeconds);
    const rounds = Object.fromEntries(pair.map(([name]) => [name, []]));
    for (let i = 0; i < roundCount; i += 1) {
      for (const [name, target] of i % 2 === 0 ? pair : [...pair].reverse()) {
        rounds[name].push(await round(target, sim, tokens, { seconds: seconds / roundCount, connections }));
      }
    }
    const single = await oneAtATime(broker, sim, tokens);
    const peer = await peerMints(ready.floor);
    return {
      b: summarise(rounds.broker, warm.broker),
      f: summarise(rounds.floor, warm.floor),
      fr: floorRequest ? summarise(rounds.floorRequest, warm.floorRequest) : undefined,
      rounds,
      single,
      peer,
    };
  } finally {
    broker.stop();
    floor.stop();
    floorRequest?.stop();
    sim.send("exit");
  }
}

const SINGLE_EXCHANGES = 20;
const PEER_JOBS = 10;

/**
 * Exchanges one after another on a warm broker: each one's wall time, the platform requests and
 * new connections it needed, and its bytes on the link (when there is one).
 */
async function oneAtATime(broker, sim, tokens) {
  // The last round's requests still in flight (over the link: a round trip and more) land first.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const exchange = async (i) => {
    const response = await fetch(`${broker.url}/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ oidcToken: tokens(), owner: "octo-org", repo: "app", ref: "refs/heads/main", runId: "1" }),
    });
    await response.text();
    if (response.status !== 200) throw new Error(`one exchange: POST /token answered ${response.status}`);
  };
  // Two first, not counted: the first after the load may find its connection gone idle.
  await exchange(0);
  await exchange(1);
  await ask(sim, "reset", "reset");
  const before = (await ask(sim, "link", "link")).stats;
  const times = [];
  for (let i = 0; i < SINGLE_EXCHANGES; i += 1) {
    const started = performance.now();
    await exchange(i + 2);
    times.push(performance.now() - started);
  }
  const { stats } = await ask(sim, "stats", "stats");
  const after = (await ask(sim, "link", "link")).stats;
  return {
    ms: median(times),
    upstream: stats.total / SINGLE_EXCHANGES,
    link: after ? { connections: after.connections - before.connections, up: (after.bytesUp - before.bytesUp) / SINGLE_EXCHANGES, down: (after.bytesDown - before.bytesDown) / SINGLE_EXCHANGES } : undefined,
  };
}

/**
 * The peer of /token: a mint per job as actions/create-github-app-token does it, each job a
 * process of its own (here: a new connection pool): sign an App JWT, GET the repository's
 * installation, POST its access_tokens for that repository. Median wall time of PEER_JOBS jobs.
 */
async function peerMints(floor) {
  const times = [];
  for (let i = 0; i < PEER_JOBS; i += 1) {
    const agent = new Agent();
    const started = performance.now();
    try {
      const jwt = await appJwt(floor.appId, floor.appKeyPem);
      const headers = { authorization: `Bearer ${jwt}`, accept: "application/vnd.github+json", "user-agent": "create-github-app-token-peer" };
      const lookup = await request(`${floor.apiBase}/repos/octo-org/app/installation`, { headers, dispatcher: agent });
      const { id } = await lookup.body.json();
      const minted = await request(`${floor.apiBase}/app/installations/${id}/access_tokens`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ repositories: ["app"] }),
        dispatcher: agent,
      });
      const body = await minted.body.json();
      if (minted.statusCode !== 201 || !body.token) throw new Error(`peer mint answered ${minted.statusCode}`);
      times.push(performance.now() - started);
    } finally {
      await agent.close();
    }
  }
  return { ms: median(times) };
}

export async function run(options = {}) {
  const seconds = Number(process.env.BENCH_SECONDS || options.seconds || 15);
  const connections = Number(options.connections || 64);
  const warmUpSeconds = Number(process.env.BENCH_WARMUP_SECONDS || 10);
  const loop = await measure({ seconds, connections, rounds: ROUNDS, warmUpSeconds, floorRequest: true });
  // Over the link: shorter (the loopback run above has the long rounds and the third target).
  const linked = options.link
    ? await measure({ link: options.link, seconds: Number(process.env.BENCH_LINK_SECONDS || 6), connections, rounds: 3, warmUpSeconds: Math.min(3, warmUpSeconds), floorRequest: true })
    : undefined;
  const { b, f, fr, rounds } = loop;
  // Per-round ratios against one floor (the rounds alternate, so round i of each ran side by side).
  const perRound = (run, floorName) => run.rounds.broker.map((r, i) => r.rps / run.rounds[floorName][i].rps);
  // The target is on the request() floor: the physical floor. The fetch floor is slower than the
  // broker itself (fetch costs more than request()), so a ratio on it flatters the broker.
  const ratio = median(perRound(loop, "floorRequest"));
  const linkRatio = linked ? median(perRound(linked, "floorRequest")) : undefined;
  const fetchRatio = median(perRound(loop, "floor"));
  const linkFetchRatio = linked ? median(perRound(linked, "floor")) : undefined;
  const cpuRatio = fr.cpuPerRequest / Math.max(1e-9, b.cpuPerRequest);
  const n = (x, d = 1) => x.toFixed(d);
  const info = (metric, value, link = "") => ({ metric, value, link, target: "", ok: null });
  const growth = b.rssAfter - b.rssBefore;
  const lb = linked?.b;
  const lf = linked?.f;
  const lfr = linked?.fr;
  const three = (x, y, z) => `${x} / ${y} / ${z}`;
  // The floor of one exchange over the link: one round trip (the mint, on a connection kept open:
  // the OIDC key set, the App JWT and the installation are cached in steady state) plus its bytes,
  // the larger direction ÷ bandwidth. The exchange's own loopback leg to the broker is not the link's.
  const single = linked?.single;
  const singleFloor = single ? linkFloorMs(options.link, { roundTrips: 1, bytes: Math.max(single.link.up, single.link.down) }) : undefined;
  const steady = (s) => `${n(s.upstream, 2)}${s.link ? ` (${s.link.connections} new connections)` : ""}`;
  const steadyOk = (s) => Math.abs(s.upstream - 1) < 0.001 && (!s.link || s.link.connections === 0);
  const peerText = (run) => `${n(run.peer.ms)} ms (${n(run.peer.ms / run.single.ms)}× ours)`;
  return [
    info(`loopback: ${seconds} s per target in ${ROUNDS} alternating rounds${linked ? `; link: ${Number(process.env.BENCH_LINK_SECONDS || 6)} s in 3` : ""}, ${connections} connections; values are broker / floor on request() / floor on fetch`, ""),
    info("requests/s (median round)", three(n(b.rps, 0), n(fr.rps, 0), n(f.rps, 0)), lb ? three(n(lb.rps, 0), n(lfr.rps, 0), n(lf.rps, 0)) : ""),
    info("broker ÷ floor on request() per round", perRound(loop, "floorRequest").map((x) => n(x, 2)).join(", "), linked ? perRound(linked, "floorRequest").map((x) => n(x, 2)).join(", ") : ""),
    {
      metric: "throughput: broker ÷ floor on undici request() (the physical floor; median round)",
      value: n(ratio, 2),
      link: linked ? n(linkRatio, 2) : "",
      target: "≥ 0.8",
      ok: linked ? [ratio >= 0.8, linkRatio >= 0.8] : ratio >= 0.8,
    },
    info("throughput: broker ÷ floor on fetch (median round; fetch is the slower client)", n(fetchRatio, 2), linked ? n(linkFetchRatio, 2) : ""),
    info("latency p50 / p99 (ms, median round)", three(`${n(b.p50)}/${n(b.p99)}`, `${n(fr.p50)}/${n(fr.p99)}`, `${n(f.p50)}/${n(f.p99)}`), lb ? three(`${n(lb.p50)}/${n(lb.p99)}`, `${n(lfr.p50)}/${n(lfr.p99)}`, `${n(lf.p50)}/${n(lf.p99)}`) : ""),
    info("answers 2xx / other", three(`${b.ok}/${b.failed}`, `${fr.ok}/${fr.failed}`, `${f.ok}/${f.failed}`), lb ? three(`${lb.ok}/${lb.failed}`, `${lfr.ok}/${lfr.failed}`, `${lf.ok}/${lf.failed}`) : ""),
    info("CPU ms per request", three(n(b.cpuPerRequest, 3), n(fr.cpuPerRequest, 3), n(f.cpuPerRequest, 3)), lb ? three(n(lb.cpuPerRequest, 3), n(lfr.cpuPerRequest, 3), n(lf.cpuPerRequest, 3)) : ""),
    // The simulator (and the link's relay) share the machine's cores with the target: its CPU per
    // exchange is taken from what the target could have had.
    info("simulator (and relay) CPU ms per request", three(n(b.simCpuPerRequest, 3), n(fr.simCpuPerRequest, 3), n(f.simCpuPerRequest, 3)), lb ? three(n(lb.simCpuPerRequest, 3), n(lfr.simCpuPerRequest, 3), n(lf.simCpuPerRequest, 3)) : ""),
    // Steadier than throughput on a shared machine: CPU spent per exchange does not depend on
    // how much of the machine the other processes left to the target during its round.
    { metric: "CPU per request: floor on request() ÷ broker", value: n(cpuRatio, 2), link: lb ? n(lfr.cpuPerRequest / Math.max(1e-9, lb.cpuPerRequest), 2) : "", target: "≥ 0.85 / -", ok: linked ? [cpuRatio >= 0.85, null] : cpuRatio >= 0.85 },
    info("CPU per request: floor on fetch ÷ broker", n(f.cpuPerRequest / Math.max(1e-9, b.cpuPerRequest), 2), lb ? n(lf.cpuPerRequest / Math.max(1e-9, lb.cpuPerRequest), 2) : ""),
    {
      metric: "upstream requests per exchange (broker, under load)",
      value: n(b.upstreamPerExchange, 3),
      link: lb ? n(lb.upstreamPerExchange, 3) : "",
      target: "1",
      ok: lb ? [Math.abs(b.upstreamPerExchange - 1) < 0.001, Math.abs(lb.upstreamPerExchange - 1) < 0.001] : Math.abs(b.upstreamPerExchange - 1) < 0.001,
    },
    info("upstream requests other than mints (broker)", String(b.otherUpstream), lb ? String(lb.otherUpstream) : ""),
    info("policy reader token mints during the rounds (broker; kept across rounds, not per exchange)", String(b.readerMints), lb ? String(lb.readerMints) : ""),
    info("App JWTs signed / JWKS fetches during the run (broker)", `${b.appJwts} / ${b.jwks}`, lb ? `${lb.appJwts} / ${lb.jwks}` : ""),
    {
      metric: `one exchange at a time (median of ${SINGLE_EXCHANGES}, warm broker): wall time`,
      value: `${n(loop.single.ms)} ms`,
      link: single ? `${n(single.ms)} ms` : "",
      floor: single ? `${n(singleFloor)} ms` : "",
      ratio: single ? n(single.ms / singleFloor, 2) : "",
      target: "",
      ok: null,
    },
    { metric: "  steady state: platform requests per exchange (the mint)", value: steady(loop.single), link: single ? steady(single) : "", target: "1, no new connection", ok: single ? [steadyOk(loop.single), steadyOk(single)] : steadyOk(loop.single) },
    ...(single ? [info("  bytes on the wire per exchange, up / down", "", `${n(single.link.up, 0)} / ${n(single.link.down, 0)} B`)] : []),
    info(`  peer: a mint per job as create-github-app-token does it (JWT, GET installation, POST mint, new connection; median of ${PEER_JOBS})`, peerText(loop), linked ? peerText(linked) : ""),
    info("RSS at start (MB)", three(n(b.rssStart), n(fr.rssStart), n(f.rssStart))),
    info("RSS after warm-up → after the rounds (MB)", three(`${n(b.rssBefore)}→${n(b.rssAfter)}`, `${n(fr.rssBefore)}→${n(fr.rssAfter)}`, `${n(f.rssBefore)}→${n(f.rssAfter)}`)),
    { metric: "broker RSS growth during the rounds (MB)", value: n(growth), target: "< 30", ok: growth < 30 },
  ];
}
