// The platform simulator as a process of its own for the `neighbours` scenario: one App installed
// on two owners (tenant B `quiet-org`, tenant A `noisy-org`), GitHub's secondary limits ON with
// GitHub's values (900 REST points a minute per App or installation, 100 requests at once), so
// that what A spends can starve B. It signs the OIDC tokens the bench copies, and answers the
// parent's questions (over the fork IPC channel) about the points each tenant spent.
import { createSimulator } from "../build/simulator/index.js";

const sim = await createSimulator(); // GitHub's limits: nothing lifted
const app = sim.createApp();
const permissions = { contents: "write", pull_requests: "write", checks: "write", metadata: "read" };

// Tenant B: its own owner and repository, the App installed.
const quiet = sim.addInstallation({ appId: app.id, account: "quiet-org", permissions, repositories: ["svc"] });
sim.git.createBranch("quiet-org/svc", "main", { files: { "README.md": "# svc\n", ".github/workflows/release.yml": "on: push\n" } });

// Tenant A: `app` (a policy that allows its pushes to main), `locked` (a policy that allows
// nothing: its jobs are denied), and `bare`, a repository the App is not installed on.
const noisy = sim.addInstallation({ appId: app.id, account: "noisy-org", permissions, repositories: ["app", "locked", ".github"] });
const ALLOW = "rules:\n  - name: main-push\n    if: {event: push, ref: refs/heads/main}\n    permissions: {contents: read}\n";
const DENY = "rules:\n  - name: tags-only\n    if: {event: push, ref: refs/tags/v*}\n    permissions: {contents: read}\n";
sim.git.createBranch("noisy-org/app", "main", { files: { "README.md": "# app\n", ".github/workflows/release.yml": "on: push\n", ".github/tokensmith.yml": ALLOW } });
sim.git.createBranch("noisy-org/locked", "main", { files: { "README.md": "# locked\n", ".github/workflows/release.yml": "on: push\n", ".github/tokensmith.yml": DENY } });
sim.git.createBranch("noisy-org/.github", "main", { files: { "README.md": "# noisy-org\n" } });
sim.repository("noisy-org", "bare");
sim.git.createBranch("noisy-org/bare", "main", { files: { "README.md": "# bare\n" } });

// A's pull requests: most change a file that is no policy file, two change the policy file.
const pulls = [];
for (let i = 0; i < 10; i += 1) {
  const policy = i < 2;
  const branch = `feature-${i}`;
  sim.git.createBranch("noisy-org/app", branch, { from: "main" });
  sim.git.setFile("noisy-org/app", policy ? ".github/tokensmith.yml" : `docs/note-${i}.md`, policy ? `${ALLOW}# ${i}\n` : `note ${i}\n`, { branch });
  const number = sim.git.addPullRequest("noisy-org/app", { base: "main", head: branch });
  const pr = sim.git.pullRequest("noisy-org/app", number);
  pulls.push({ number, headSha: pr.headSha, baseSha: pr.mergedBaseSha, policy });
}

const now = Math.floor(Date.now() / 1000);
const exp = now + 3600; // a real runner's token lives 5 minutes; the bench's whole run is longer
const sign = (claims) => sim.oidc.sign({ exp, ...claims });
const templates = {
  quiet: await sign({ repository: "quiet-org/svc", run_id: "100" }),
  // Tenant A's denied jobs: fresh tokens of `locked` (its policy allows no job).
  locked: await sign({ repository: "noisy-org/locked", run_id: "200" }),
};
// Replayed as they are: tokens of the repository without the App, and one valid token of A's own.
const bare = [];
for (let i = 0; i < 10; i += 1) bare.push(await sign({ repository: "noisy-org/bare", run_id: String(300 + i) }));
const valid = await sign({ repository: "noisy-org/app", run_id: "400" });

const tenants = new Map([[quiet, "B"], [noisy, "A"]]);
const owners = new Map([["quiet-org", "B"], ["noisy-org", "A"]]);

/** The tenant a recorded request is spent for, and on whose budget (the App's, shared; or its installation's). */
function attribute(r) {
  if (r.auth.kind === "installation") {
    const installationId = sim.tokens.get(r.auth.token)?.installationId;
    return { tenant: tenants.get(installationId) ?? "?", budget: "installation" };
  }
  if (r.auth.kind !== "app") return null; // the OIDC issuer's documents: no budget
  const byInstallation = /^\/app\/installations\/(\d+)/.exec(r.path);
  if (byInstallation) return { tenant: tenants.get(Number(byInstallation[1])) ?? "?", budget: "app" };
  const byRepository = /^\/repos\/([^/]+)\//.exec(r.path) ?? /^\/(?:orgs|users)\/([^/]+)\//.exec(r.path);
  return { tenant: (byRepository && owners.get(byRepository[1].toLowerCase())) ?? "?", budget: "app" };
}

const refusedBySecondaryLimit = (r) => r.response?.status === 403 && /secondary rate limit/.test(JSON.stringify(r.response.body ?? ""));

function stats() {
  const per = {};
  for (const r of sim.requests) {
    const who = attribute(r);
    if (!who) continue;
    const entry = (per[who.tenant] ??= { appPoints: 0, installationPoints: 0, requests: 0, mints: 0, lookups: 0, refused: 0, checkRuns: 0 });
    entry.requests += 1;
    if (refusedBySecondaryLimit(r)) {
      entry.refused += 1; // refused: no points spent
      continue;
    }
    const points = ["GET", "HEAD", "OPTIONS"].includes(r.method) ? 1 : 5;
    if (who.budget === "app") entry.appPoints += points;
    else entry.installationPoints += points;
    if (r.method === "POST" && r.path.endsWith("/access_tokens")) entry.mints += 1;
    if (r.method === "GET" && r.path.endsWith("/installation")) entry.lookups += 1;
    if (r.method === "POST" && r.path.endsWith("/check-runs")) entry.checkRuns += 1;
  }
  return { per, refused: { ...sim.limits.refused }, peakInFlight: sim.limits.peakInFlight };
}

process.on("message", (message) => {
  if (message === "stats") process.send({ type: "stats", stats: stats() });
  if (message === "reset") {
    sim.clearRequests();
    sim.limits.resetPeak();
    for (const key of Object.keys(sim.limits.refused)) sim.limits.refused[key] = 0;
    // Tokens handed out are forgotten (memory), the broker's reader tokens kept (as GitHub keeps them).
    for (const [token, issued] of sim.tokens) if (JSON.stringify(issued.permissions) !== '{"contents":"read"}') sim.tokens.delete(token);
    process.send({ type: "reset" });
  }
  // A new topology starts with the App's points window empty (as after a quiet minute), so that it
  // does not inherit the previous topology's spending.
  if (message === "forget-points") {
    sim.limits.forgetSpentPoints();
    process.send({ type: "forget-points" });
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
  },
  templates,
  bare,
  valid,
  pulls,
  installations: { quiet, noisy },
  repositoryIds: { app: sim.findRepository("noisy-org", "app").id },
  oidcKeyPem: sim.oidc.currentKey.privateKey.export({ type: "pkcs8", format: "pem" }),
});
