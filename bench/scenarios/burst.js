// Scenario `burst`: 500 concurrent cold POST /token (a fleet of jobs starting at once), for one
// repository and for 50, against the simulator with 30 ms of latency. What it proves: concurrent
// cold calls for one repository share one installation lookup, and the platform never sees more
// than UPSTREAM_MAX_CONCURRENCY requests in flight (GitHub's secondary limit is 100).
import { createSimulator } from "../../build/simulator/index.js";
import { percentile, startBroker, timed } from "../support.js";

export const description = "500 concurrent cold POST /token, for 1 repository and for 50, simulator latency 30 ms, UPSTREAM_MAX_CONCURRENCY default (50)";

const CALLS = 500;
const LATENCY_MS = 30;
const CAP = 50; // the default of UPSTREAM_MAX_CONCURRENCY

async function burst(repositories, env = {}) {
  // GitHub's concurrency limit stays on; its points budget (900 a minute: 500 mints are 2,500
  // points) is lifted, because this measures the broker under a burst, not the App's budget.
  const sim = await createSimulator({ secondaryLimits: { pointsPerMinute: Infinity } });
  try {
    const app = sim.createApp();
    const names = Array.from({ length: repositories }, (_, i) => `repo-${i}`);
    sim.addInstallation({ appId: app.id, account: "octo-org", permissions: { contents: "write", metadata: "read" }, repositories: [...names, "warm"] });
    const broker = await startBroker({ HOST_APP_ID: String(app.id), HOST_APP_PRIVATE_KEY: app.privateKeyPem, HOST_API_BASE: sim.apiBase, HOST_OIDC_ISSUER: sim.oidc.issuer, ...env });
    try {
      const exchange = async (oidcToken, repo) => {
        const { result, ms } = await timed(async () => {
          const res = await fetch(`${broker.url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken, owner: "octo-org", repo }) });
          await res.arrayBuffer();
          return res.status;
        });
        return { status: result, ms };
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
  // For comparison, information only: the same 50-repository burst with the cap lifted.
  const open = await burst(50, { UPSTREAM_MAX_CONCURRENCY: "100000" });
  rows.push(
    { metric: "cap lifted (UPSTREAM_MAX_CONCURRENCY=100000), 50 repositories: peak in flight / 403s / answers 200", value: `${open.peak} / ${open.refused} / ${open.ok}`, target: "", ok: null },
    { metric: "cap lifted, 50 repositories: wall / p99 (ms)", value: `${open.wallMs.toFixed(0)} / ${open.p99.toFixed(0)}`, target: "", ok: null },
  );
  return rows;
}
