// Scenario `fleet`: two broker processes on one Redis (LEGACY_QUOTA_KV), the simulator here at
// 30 ms per upstream request, 20 installations × 50 repositories. Concurrent cold GET /releases on
// both instances must run exactly one crawl (issue 12), and every answer must be the same
// aggregate; for comparison the same burst with a per-process store (memory://) crawls on each.
// Each burst uses a fresh App, so its keys in the shared Redis are its own and start cold.
// Then POST /token throughput, one broker process vs two side by side (the simulator of the
// `token` scenario in a process of its own, autocannon here, 64 connections in all, alternating
// rounds): information only; on a machine of two shared cores two processes cannot double it.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createSimulator, linkFloorMs } from "../../build/simulator/index.js";
import { spawnBroker } from "../broker-process.js";
import { bytesSince, median, megabytes, timed } from "../support.js";
import { loadToken, tokenSigner } from "../token-support.js";

const INSTALLATIONS = 20;
const REPOSITORIES = 50;
const LATENCY_MS = 30;
const PER_INSTANCE = 8;
const REDIS = process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379";
const SECRET = "bench-secret-0123456789abcdef0123456";
const TOKEN_ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const TOKEN_ROUND_SECONDS = Number(process.env.BENCH_FLEET_ROUND_SECONDS || 3);
const CONNECTIONS = 64;

export const description = `two broker processes on one Redis: ${PER_INSTANCE} concurrent cold GET /releases on each, ${INSTALLATIONS} installations × ${REPOSITORIES} repositories, ${LATENCY_MS} ms per upstream request`;

// Over the link (run({ link })): the Redis burst once more with the simulator behind the link
// (simulator/link.ts, no added delay). Its floor is one crawl's (bench/scenarios/releases.js):
// 4 round trips in a row (a connection, the installations, the mints, the GraphQL queries) plus
// the larger direction's bytes ÷ bandwidth, as the link counted them; the second instance waits
// for the first's aggregate through Redis, on loopback.
const CRAWL_ROUND_TRIPS = 4;

export async function run({ link } = {}) {
  const sim = await createSimulator();
  const linked = link ? await createSimulator({ link }) : undefined;
  const fleetOf = (sim) => {
    const app = sim.createApp();
    for (let i = 0; i < INSTALLATIONS; i += 1) {
      const repositories = Array.from({ length: REPOSITORIES }, (_, j) => `repo-${String(j).padStart(2, "0")}`);
      sim.addInstallation({ appId: app.id, account: `fleet-${app.id}-${String(i).padStart(2, "0")}`, permissions: { contents: "read", metadata: "read" }, repositories });
    }
    return { HOST_APP_ID: String(app.id), HOST_APP_PRIVATE_KEY: app.privateKeyPem, HOST_API_BASE: sim.apiBase, PROCESS_TRIGGER_SECRET: SECRET };
  };
  const get = async (url) => {
    const response = await fetch(`${url}/releases`, { headers: { authorization: `Bearer ${SECRET}` } });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`GET /releases answered ${response.status} ${text}`);
    return JSON.parse(text);
  };

  /** A cold burst on two fresh instances sharing `store`: crawls seen upstream, answers, wall time. */
  const burst = async (store, sim) => {
    const env = { ...fleetOf(sim), LEGACY_QUOTA_KV: store };
    const instances = await Promise.all([spawnBroker(env), spawnBroker(env)]);
    try {
      // A request each first warms the processes' HTTP path up without crawling (wrong secret: 401).
      await Promise.all(instances.map((b) => fetch(`${b.url}/releases`, { headers: { authorization: "Bearer wrong" } })));
      sim.clearRequests();
      const before = sim.link ? { ...sim.link.stats } : undefined;
      const { result: answers, ms } = await timed(() => Promise.all(Array.from({ length: PER_INSTANCE }, () => instances.map((b) => get(b.url))).flat()));
      const crawls = sim.requests.filter((r) => r.method === "GET" && r.path === "/app/installations").length;
      const same = answers.every((a) => a.generated_at === answers[0].generated_at && a.repos.length === INSTALLATIONS * REPOSITORIES);
      return { crawls, upstream: sim.requests.length, same, ms, answers: answers.length, bytes: before ? bytesSince(sim.link, before) : undefined };
    } finally {
      await Promise.all(instances.map((b) => b.stop()));
    }
  };

  sim.latencyMs = LATENCY_MS;
  try {
    const shared = await burst(REDIS, sim);
    const overLink = linked ? await burst(REDIS, linked) : undefined;
    const local = await burst("memory://", sim);
    const token = await tokenThroughput();
    const floor = overLink ? linkFloorMs(link, { roundTrips: CRAWL_ROUND_TRIPS, bytes: Math.max(overLink.bytes.up, overLink.bytes.down) }) : undefined;
    return [
      {
        metric: `Redis: crawls for ${shared.answers} concurrent cold requests on 2 instances`,
        value: String(shared.crawls),
        link: overLink ? String(overLink.crawls) : "",
        target: "1",
        ok: overLink ? [shared.crawls === 1, overLink.crawls === 1] : shared.crawls === 1,
      },
      {
        metric: "Redis: every answer the same aggregate (generated_at, size)",
        value: shared.same ? "yes" : "no",
        link: overLink ? (overLink.same ? "yes" : "no") : "",
        target: "yes",
        ok: overLink ? [shared.same, overLink.same] : shared.same,
      },
      { metric: "Redis: upstream requests", value: String(shared.upstream), link: overLink ? String(overLink.upstream) : "", target: "", ok: null },
      {
        metric: "Redis: burst wall time",
        value: `${(shared.ms / 1000).toFixed(3)} s`,
        link: overLink ? `${(overLink.ms / 1000).toFixed(3)} s` : "",
        floor: overLink ? `${(floor / 1000).toFixed(3)} s` : "",
        ratio: overLink ? (overLink.ms / floor).toFixed(2) : "",
        target: "",
        ok: null,
      },
      ...(overLink ? [{ metric: "  bytes on the wire, up + down", link: `${megabytes(overLink.bytes.up + overLink.bytes.down)} (${megabytes(overLink.bytes.up)} up)`, target: "", ok: null }] : []),
      { metric: `memory:// (per process): crawls for ${local.answers} requests`, value: String(local.crawls), target: "2 (one per instance)", ok: null },
      { metric: "memory:// (per process): upstream requests", value: String(local.upstream), target: "", ok: null },
      { metric: "memory:// (per process): burst wall time", value: `${(local.ms / 1000).toFixed(3)} s`, target: "", ok: null },
      ...token,
    ];
  } finally {
    await sim.close();
    await linked?.close();
  }
}

/** POST /token requests/s: one broker with all the connections, then two sharing them, alternating. */
async function tokenThroughput() {
  const sim = fork(fileURLToPath(new URL("../token-simulator-process.js", import.meta.url)), [], { stdio: "inherit", execArgv: ["--expose-gc"] });
  const ready = await new Promise((resolve) => sim.once("message", resolve));
  const brokers = await Promise.all([spawnBroker(ready.env), spawnBroker(ready.env)]);
  const tokens = tokenSigner(ready.tokens[0], ready.oidcKeyPem);
  const load = (url, connections, seconds) => loadToken(url, tokens, { seconds, connections });
  const one = () => load(brokers[0].url, CONNECTIONS, TOKEN_ROUND_SECONDS);
  const two = async () => {
    const parts = await Promise.all(brokers.map((b) => load(b.url, CONNECTIONS / 2, TOKEN_ROUND_SECONDS)));
    return { rps: parts[0].rps + parts[1].rps, failed: parts[0].failed + parts[1].failed };
  };
  try {
    await Promise.all([one(), two()]); // warm-up: key sets, App JWTs, installation ids, JIT
    const rounds = { one: [], two: [] };
    for (let i = 0; i < TOKEN_ROUNDS; i += 1) {
      const order = i % 2 === 0 ? [["one", one], ["two", two]] : [["two", two], ["one", one]];
      for (const [name, run] of order) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        rounds[name].push(await run());
      }
    }
    const rps = (name) => median(rounds[name].map((r) => r.rps));
    const failed = [...rounds.one, ...rounds.two].reduce((total, r) => total + r.failed, 0);
    const ratio = median(rounds.two.map((r, i) => r.rps / rounds.one[i].rps));
    return [
      { metric: `POST /token requests/s, 1 process / 2 processes (median of ${TOKEN_ROUNDS} × ${TOKEN_ROUND_SECONDS} s, ${CONNECTIONS} connections)`, value: `${rps("one").toFixed(0)} / ${rps("two").toFixed(0)}`, target: "", ok: null },
      { metric: "POST /token: 2 processes ÷ 1 (median round)", value: ratio.toFixed(2), target: "", ok: null },
      { metric: "POST /token: answers other than 2xx", value: String(failed), target: "0", ok: failed === 0 },
    ];
  } finally {
    await Promise.all(brokers.map((b) => b.stop()));
    sim.send("exit");
  }
}
