// The platform simulator as a process of its own for the `token-policy` benchmark: an App
// installed on octo-org (app and .github), a pool of OIDC tokens, policy files set on request, and
// counts of what it was asked (over the fork IPC channel).
import { createSimulator } from "../build/simulator/index.js";

const POOL = Number(process.env.BENCH_TOKEN_POOL || 2000);
// GitHub's points budget would stop a throughput bench after 180 mints: lifted, as in the `token`
// scenario (the bench measures the broker, not the App's budget). The concurrency limit stays on.
const sim = await createSimulator({ secondaryLimits: { pointsPerMinute: Infinity } });
const app = sim.createApp();
const installationId = sim.addInstallation({
  appId: app.id,
  account: "octo-org",
  permissions: { contents: "write", pull_requests: "write", metadata: "read" },
  repositories: ["app", ".github"],
});
sim.git.createBranch("octo-org/app", "main", { files: { "README.md": "# app\n", ".github/workflows/release.yml": "on: push\n" } });
sim.git.createBranch("octo-org/.github", "main", { files: { "README.md": "# octo-org\n" } });
const now = Math.floor(Date.now() / 1000);
const tokens = [];
// The simulator's default claims: a push to refs/heads/main of octo-org/app (release.yml).
for (let i = 0; i < POOL; i += 1) tokens.push(await sim.oidc.sign({ exp: now + 1800, run_id: String(10_000 + i) }));

let primaryAtReset = 0;
const FILES = { repository: ["octo-org/app", ".github/tokensmith.yml"], owner: ["octo-org/.github", ".github/tokensmith-org.yml"] };

function stats() {
  let mints = 0;
  let readerMints = 0;
  let policyReads = 0;
  let other = 0;
  const statuses = {};
  for (const r of sim.requests) {
    if (r.method === "POST" && r.path.endsWith("/access_tokens")) {
      if (JSON.stringify(r.body?.permissions) === '{"contents":"read"}') readerMints += 1;
      else mints += 1;
    } else if (/\/contents(\/|$)/.test(r.path)) {
      policyReads += 1;
      const status = String(r.response?.status ?? "none");
      statuses[status] = (statuses[status] ?? 0) + 1;
    } else other += 1;
  }
  return { total: sim.requests.length, mints, readerMints, policyReads, statuses, other, primarySpent: sim.primaryRateLimitUsed(installationId) - primaryAtReset };
}

process.on("message", (message) => {
  if (message === "stats") process.send({ type: "stats", stats: stats() });
  if (message === "reset") {
    sim.clearRequests();
    primaryAtReset = sim.primaryRateLimitUsed(installationId);
    // The jobs' tokens are forgotten between rounds (memory); the broker's reader token is kept,
    // as GitHub keeps it, or the next policy read would be a 401 and a new mint.
    for (const [token, issued] of sim.tokens) if (JSON.stringify(issued.permissions) !== '{"contents":"read"}') sim.tokens.delete(token);
    globalThis.gc?.();
    process.send({ type: "reset" });
  }
  if (message?.type === "policies") {
    for (const kind of ["repository", "owner"]) sim.git.setFile(...FILES[kind], message[kind] ?? null);
    process.send({ type: "policies" });
  }
  if (message === "exit") void sim.close().then(() => process.exit(0));
});

process.send({
  type: "ready",
  env: {
    HOST_APP_ID: String(app.id),
    HOST_APP_PRIVATE_KEY: app.privateKeyPem,
    HOST_API_BASE: sim.apiBase,
    HOST_OIDC_ISSUER: sim.oidc.issuer,
    UPSTREAM_POINTS_PER_MINUTE: "1000000000",
  },
  floor: { issuer: sim.oidc.issuer, jwk: sim.oidc.currentKey.publicJwk, apiBase: sim.apiBase, installationId, appId: app.id, appKeyPem: app.privateKeyPem },
  tokens,
});
