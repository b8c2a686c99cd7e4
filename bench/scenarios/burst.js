// Scenario `burst`: 500 concurrent cold POST /token (a fleet of jobs starting at once), for one
// repository and for 50, against the simulator with 30 ms of latency. What it proves: concurrent
// cold calls for one repository share one installation lookup, and the platform never sees more
// than UPSTREAM_MAX_CONCURRENCY requests in flight (GitHub's secondary limit is 100). GitHub's
// points budget is lifted on both sides for those (500 cold exchanges are 3,000 of the App's
// points, over three minutes at GitHub's 900); one more run keeps it at 900 on both sides and shows
// what the burst gets then: what fits goes out, the rest waits to its deadline and gets a
// Retry-After, and the platform refuses nothing.
import { createSimulator } from "../../build/simulator/index.js";
import { percentile, startBroker, timed } from "../support.js";

export const description = "500 concurrent cold POST /token, for 1 repository and for 50, simulator latency 30 ms, UPSTREAM_MAX_CONCURRENCY default (50)";

const CALLS = 500;
const LATENCY_MS = 30;
const CAP = 50; // the default of UPSTREAM_MAX_CONCURRENCY
/** GitHub's points budget, lifted on both sides: the simulator's, and the broker's UPSTREAM_POINTS_PER_MINUTE. */
const LIFTED = { sim: Infinity, broker: "1000000000" };
const GITHUB = { sim: 900, broker: "900" };

async function burst(repositories, env = {}, points = LIFTED) {
  // GitHub's concurrency limit stays on; its points budget is as `points` says, the same on both sides.
  const sim = await createSimulator({ secondaryLimits: { pointsPerMinute: points.sim } });
  try {
    const app = sim.createApp();
    const names = Array.from({ length: repositories }, (_, i) => `repo-${i}`);
    sim.addInstallation({ appId: app.id, account: "octo-org", permissions: { contents: "write", metadata: "read" }, repositories: [...names, "warm"] });
    const broker = await startBroker({ HOST_APP_ID: String(app.id), HOST_APP_PRIVATE_KEY: app.privateKeyPem, HOST_API_BASE: sim.apiBase, HOST_OIDC_ISSUER: sim.oidc.issuer, UPSTREAM_POINTS_PER_MINUTE: points.broker, ...env });
    try {
      const exchange = async (oidcToken, repo) => {
        const { result, ms } = await timed(async () => {
          const res = await fetch(`${broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken, owner: "octo-org", repo }) });
          await res.arrayBuffer();
          return { status: res.status, retryAfter: res.headers.get("retry-after") };
        });
        return { status: result.status, retryAfter: result.retryAfter, ms };
      };
      // The issuer's key set is fetched once beforehand (another origin in production); every
      // repository of the burst stays cold.
      await exchange(await sim.oidc.sign({ repository: "octo-org/warm" }), "warm");
      const calls = [];
      for (let i = 0; i < CALLS; i += 1) {
        const repo = names[i % repositories];
        calls.push({ repo, token: await sim.oidc.sign({ repository: `octo-org/${repo}`, run_id: String(i) }) });
      }
      sim.clearRequests();
      sim.limits.forgetSpentPoints(); // the warm-up's too: the broker's window keeps them, so this is the stricter side
      sim.latencyMs = LATENCY_MS;
      sim.limits.resetPeak();
      const { result: answers, ms: wallMs } = await timed(() => Promise.all(calls.map((call) => exchange(call.token, call.repo))));
      const lookups = sim.requests.filter((r) => r.method === "GET" && r.path.endsWith("/installation")).length;
      const mints = sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens")).length;
      return {
        ok: answers.filter((a) => a.status === 200).length,
        lookups,
        mints,
        peak: sim.limits.peakInFlight,
        refused: sim.limits.refused.concurrency,
        refusedPoints: sim.limits.refused.points,
        retryLater: answers.filter((a) => a.status >= 500 && Number(a.retryAfter) >= 1).length,
        wallMs,
        p99: percentile(answers.map((a) => a.ms), 99),
      };
    } finally {
      await broker.close();
    }
  } finally {
    await sim.close();
  }
}

export async function run() {
  const rows = [];
  for (const repositories of [1, 50]) {
    const r = await burst(repositories);
    const label = `${repositories} ${repositories === 1 ? "repository" : "repositories"}`;
    rows.push(
      { metric: `${label}: answers 200`, value: `${r.ok} / ${CALLS}`, target: `${CALLS}`, ok: r.ok === CALLS },
      { metric: `${label}: installation lookups`, value: String(r.lookups), target: `= ${repositories}`, ok: r.lookups === repositories },
      { metric: `${label}: mints`, value: String(r.mints), target: "", ok: null },
      { metric: `${label}: peak upstream in flight`, value: String(r.peak), target: `≤ ${CAP}`, ok: r.peak <= CAP },
      { metric: `${label}: secondary-limit 403s (concurrency)`, value: String(r.refused), target: "0", ok: r.refused === 0 },
      { metric: `${label}: wall / p99 (ms)`, value: `${r.wallMs.toFixed(0)} / ${r.p99.toFixed(0)}`, target: "", ok: null },
    );
  }
  rows.push({ metric: "points budget in the runs above", value: "lifted on both sides (simulator, UPSTREAM_POINTS_PER_MINUTE)", target: "", ok: null });
  // Within GitHub's budget on both sides: 50 lookups and 500 mints are 2,550 of the App's points.
  const paced = await burst(50, {}, GITHUB);
  rows.push(
    { metric: "GitHub's 900 points on both sides, 50 repositories: answers 200 / 5xx with Retry-After", value: `${paced.ok} / ${paced.retryLater}`, target: `sum ${CALLS}`, ok: paced.ok + paced.retryLater === CALLS },
    { metric: "GitHub's 900 points on both sides: mints sent / points-limit 403s", value: `${paced.mints} / ${paced.refusedPoints}`, target: "403s 0", ok: paced.refusedPoints === 0 && paced.mints === paced.ok },
    { metric: "GitHub's 900 points on both sides: wall / p99 (ms)", value: `${paced.wallMs.toFixed(0)} / ${paced.p99.toFixed(0)}`, target: "", ok: null },
  );
  // For comparison, information only: the same 50-repository burst with the cap lifted.
  const open = await burst(50, { UPSTREAM_MAX_CONCURRENCY: "100000" });
  rows.push(
    { metric: "cap lifted (UPSTREAM_MAX_CONCURRENCY=100000), 50 repositories: peak in flight / 403s / answers 200", value: `${open.peak} / ${open.refused} / ${open.ok}`, target: "", ok: null },
    { metric: "cap lifted, 50 repositories: wall / p99 (ms)", value: `${open.wallMs.toFixed(0)} / ${open.p99.toFixed(0)}`, target: "", ok: null },
  );
  return rows;
}
