// The platform simulator as a process of its own for the /token benchmarks (`token`, `token-policy`):
// it sets up an App installed on octo-org (app and .github), signs the OIDC token the bench copies, sets
// policy files on request, and answers the parent's questions about what it was asked (over the
// fork IPC channel).
import { createSimulator } from "../build/simulator/index.js";

// One token: the template the bench signs fresh ones from (token-support.js tokenSigner).
const POOL = Number(process.env.BENCH_TOKEN_POOL || 1);
// GitHub's points budget (900 a minute; a mint is 5) would stop a throughput bench after 180
// mints: lifted here, as the bench measures the broker, not the App's budget. The concurrency
// limit (100) stays on.
// BENCH_TOKEN_LINK (JSON `{ rttMs, mbit }`): the simulator behind an emulated link (simulator/link.ts).
const link = process.env.BENCH_TOKEN_LINK ? JSON.parse(process.env.BENCH_TOKEN_LINK) : undefined;
const sim = await createSimulator({ secondaryLimits: { pointsPerMinute: Infinity }, ...(link ? { link } : {}) });
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
// Valid for the whole run (a real runner's token lives 5 minutes; the bench runs longer in all).
// The simulator's default claims: a push to refs/heads/main of octo-org/app (release.yml).
for (let i = 0; i < POOL; i += 1) tokens.push(await sim.oidc.sign({ exp: now + 1800, run_id: String(10_000 + i) }));

let primaryAtReset = 0;
const FILES = { repository: ["octo-org/app", ".github/tokensmith.yml"], owner: ["octo-org/.github", ".github/tokensmith-org.yml"] };

function stats() {
  const appJwts = new Set();
  let mints = 0;
  let readerMints = 0;
  let policyReads = 0;
  let other = 0;
  const statuses = {};
  for (const r of sim.requests) {
    if (r.auth.kind === "app") appJwts.add(r.headers.authorization);
    if (r.method === "POST" && r.path.endsWith("/access_tokens")) {
      // The broker's policy reader token (TOKEN_POLICY optional: contents read only) is its own
      // upkeep, not an exchange's mint: counted apart.
      if (JSON.stringify(r.body?.permissions) === '{"contents":"read"}') readerMints += 1;
      else mints += 1;
      continue;
    }
    other += 1;
    if (/\/contents(\/|$)/.test(r.path)) {
      policyReads += 1;
      const status = String(r.response?.status ?? "none");
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  }
  return {
    total: sim.requests.length,
    mints,
    readerMints,
    other, // every request but a mint, the policy reads included
    policyReads,
    statuses,
    appJwts: appJwts.size,
    jwks: sim.oidc.jwksRequests,
    primarySpent: sim.primaryRateLimitUsed(installationId) - primaryAtReset,
  };
}

process.on("message", (message) => {
  if (message === "stats") process.send({ type: "stats", stats: stats() });
  if (message === "link") process.send({ type: "link", stats: sim.link ? { ...sim.link.stats } : null });
  if (message === "reset") {
    sim.clearRequests();
    primaryAtReset = sim.primaryRateLimitUsed(installationId);
    // The jobs' tokens are forgotten between rounds (memory); the broker's policy reader token is
    // kept, as GitHub keeps it: revoking it made every round start with a 401 on a policy read and
    // a reader re-mint, a bench artefact.
    for (const [token, issued] of sim.tokens) if (JSON.stringify(issued.permissions) !== '{"contents":"read"}') sim.tokens.delete(token);
    // What the last round left behind is collected now, not during the next target's round.
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
    // The simulator's points budget is lifted above: the broker's too, or it would pace the bench.
    UPSTREAM_POINTS_PER_MINUTE: "1000000000",
  },
  floor: { issuer: sim.oidc.issuer, jwk: sim.oidc.currentKey.publicJwk, apiBase: sim.apiBase, installationId, appId: app.id, appKeyPem: app.privateKeyPem },
  tokens,
  // The broker takes an OIDC token once (its jti is claimed): the bench signs a fresh one per
  // request from the first token's claims with the issuer's key (tokenSigner in token-support.js).
  oidcKeyPem: sim.oidc.currentKey.privateKey.export({ type: "pkcs8", format: "pem" }),
});
