// Scenario `token-policy`: POST /token under load with trust policies (issue 27: "in steady state
// /token makes no more platform requests than today"). Four brokers in turn, one per case —
// TOKEN_POLICY=off; optional with no policy file; a repository policy; repository + owner policy —
// each warmed up (reader token minted, policy files read and cached), then measured in rounds
// alternating with the floor server (bench/token-floor-server.js), all against the simulator in a
// process of its own. Upstream requests are counted at the simulator.
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { spawnBroker } from "../broker-process.js";
import { ask, loadToken, median, processTimes, startFloor, tokenSigner } from "../token-support.js";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export const description = "POST /token with trust policies (off, none, repository, repository + owner): upstream requests per mint in steady state, broker ÷ floor";

// Both grant what the API's token has (contents and pull requests write), so only the reading and
// deciding differ between the cases, not the mint.
const REPOSITORY_POLICY = `rules:
  - name: main-push
    if: {event: push, ref: refs/heads/main, workflow: .github/workflows/release.yml}
    permissions: {contents: write, pull_requests: write}
`;
const OWNER_POLICY = `rules:
  - name: apps
    repositories: [app]
    if: {event: push}
    permissions: {contents: write, pull_requests: write}
`;

const CASES = [
  { name: "off", env: { TOKEN_POLICY: "off" }, policies: {} },
  { name: "no policy file", env: { TOKEN_POLICY: "optional" }, policies: {} },
  { name: "repository policy", env: { TOKEN_POLICY: "optional" }, policies: { repository: REPOSITORY_POLICY } },
  { name: "repository + owner policy", env: { TOKEN_POLICY: "optional" }, policies: { repository: REPOSITORY_POLICY, owner: OWNER_POLICY } },
  // The cost of expiries, made visible within a short run: every 2 s each file is asked again (a
  // policy file: 304, no rate limit; no file: 404, one request of the installation's hourly limit).
  { name: "repository policy, cache 2 s", env: { TOKEN_POLICY: "optional", POLICY_CACHE_SECONDS: "2" }, policies: { repository: REPOSITORY_POLICY }, expiries: true },
  { name: "no policy file, cache 2 s", env: { TOKEN_POLICY: "optional", POLICY_CACHE_SECONDS: "2" }, policies: {}, expiries: true },
];

const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);

/** One timed round against one target, the simulator's counters reset first. */
async function round(target, sim, tokens, options) {
  await new Promise((resolve) => setTimeout(resolve, 500)); // the previous round's stragglers land
  await ask(sim, "reset", "reset");
  const before = processTimes(target.child.pid);
  const run = await loadToken(target.url, tokens, options);
  const after = processTimes(target.child.pid);
  const { stats } = await ask(sim, "stats", "stats");
  return { ...run, cpuMs: after.cpuMs - before.cpuMs, stats };
}

export async function run(options = {}) {
  const seconds = Number(process.env.BENCH_SECONDS || options.seconds || 9);
  const warmSeconds = Number(process.env.BENCH_WARMUP_SECONDS || 5);
  const connections = Number(options.connections || 64);
  const sim = fork(here("../token-simulator-process.js"), [], { stdio: "inherit", execArgv: ["--expose-gc"] });
  const ready = await ask(sim, null, "ready");
  const tokens = tokenSigner(ready.tokens[0], ready.oidcKeyPem);
  const floor = await startFloor(ready.floor);
  const n = (x, d = 1) => x.toFixed(d);
  const info = (metric, value) => ({ metric, value, target: "", ok: null });
  const rows = [info(`per case: ${warmSeconds} s warm-up, then ${seconds} s per target in ${ROUNDS} rounds alternating with the floor, ${connections} connections; POLICY_CACHE_SECONDS 60`, "")];
  const ratios = {};
  const cpu = {};
  try {
    await loadToken(floor.url, tokens, { seconds: warmSeconds, connections });
    for (const scenarioCase of CASES) {
      await ask(sim, { type: "policies", ...scenarioCase.policies }, "policies");
      const broker = await spawnBroker({ ...ready.env, ...scenarioCase.env });
      try {
        // Warm: key set, App JWT, installation, and (with policies on) the reader token and each file's read.
        await ask(sim, "reset", "reset");
        await loadToken(broker.url, tokens, { seconds: warmSeconds, connections });
        const { stats: warm } = await ask(sim, "stats", "stats");
        const rounds = { broker: [], floor: [] };
        for (let i = 0; i < ROUNDS; i += 1) {
          const pair = [["broker", broker], ["floor", floor]];
          for (const [name, target] of i % 2 === 0 ? pair : pair.reverse()) {
            rounds[name].push(await round(target, sim, tokens, { seconds: seconds / ROUNDS, connections }));
          }
        }
        const sum = (list, pick) => list.reduce((total, r) => total + pick(r), 0);
        const b = rounds.broker;
        const mints = sum(b, (r) => r.stats.mints);
        const upstream = sum(b, (r) => r.stats.total);
        const perMint = upstream / Math.max(1, mints);
        const reads = sum(b, (r) => r.stats.policyReads);
        const readerMints = sum(b, (r) => r.stats.readerMints);
        const describeReads = (count, byStatus) => `${count}${count ? ` (${Object.entries(byStatus).map(([status, times]) => `${times}×${status}`).join(", ")})` : ""}`;
        const statuses = {};
        for (const r of b) for (const [status, count] of Object.entries(r.stats.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
        const ratio = median(b.map((r, i) => r.rps / rounds.floor[i].rps));
        ratios[scenarioCase.name] = ratio;
        const exchanges = sum(b, (r) => r.ok + r.failed);
        cpu[scenarioCase.name] = sum(b, (r) => r.cpuMs) / Math.max(1, exchanges);
        const label = `${scenarioCase.name}:`;
        rows.push(
          info(`${label} answers 2xx / other (broker)`, `${sum(b, (r) => r.ok)}/${sum(b, (r) => r.failed)}`),
          info(`${label} warm-up: policy reads / reader mints`, `${describeReads(warm.policyReads, warm.statuses)} / ${warm.readerMints}`),
          scenarioCase.expiries
            ? info(`${label} upstream requests per mint (a read per file per 2 s)`, n(perMint, 4))
            : { metric: `${label} upstream requests per mint (steady state)`, value: n(perMint, 4), target: "1", ok: mints > 0 && Math.abs(perMint - 1) < 0.001 },
          info(`${label} policy reads / reader mints / installation rate limit spent, in the rounds`, `${describeReads(reads, statuses)} / ${readerMints} / ${sum(b, (r) => r.stats.primarySpent)}`),
          info(`${label} requests/s broker / floor (median round)`, `${n(median(b.map((r) => r.rps)), 0)} / ${n(median(rounds.floor.map((r) => r.rps)), 0)}`),
          info(`${label} throughput: broker ÷ floor (median round)`, n(ratio, 2)),
          info(`${label} broker CPU ms per request`, n(cpu[scenarioCase.name], 3)),
        );
      } finally {
        await broker.stop();
      }
    }
    // CPU per request is the steadier of the two on a shared machine (it does not depend on how much
    // of the machine the other processes left to the broker during its rounds).
    for (const name of Object.keys(ratios).slice(1, 4)) {
      rows.push(info(`${name} ÷ off: broker ÷ floor / broker CPU per request`, `${n(ratios[name] / ratios.off, 2)} / ${n(cpu[name] / cpu.off, 2)}`));
    }
    return rows;
  } finally {
    floor.stop();
    sim.send("exit");
  }
}
