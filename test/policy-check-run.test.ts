// POLICY_CHECK_RUNS over HTTP through the simulator: a pull_request delivery whose pull request
// changes .github/tokensmith.yml gets a `tokensmith policy` check run (failure with the line, or
// success), only when the installation grants checks: write; the flag off leaves the answer the API's.
import { describe, expect, it } from "@jest/globals";
import { randomUUID } from "node:crypto";
import { brokerPerTest } from "./support/broker-per-test.js";
import { pullRequestChanging as changing } from "./support/policy-pull-request.js";
import { signatureFor } from "../server/webhook/verify-signature.js";

const SECRET = "policy-check-secret-0123456789abcdef";
const t = brokerPerTest({
  env: { HOST_WEBHOOK_SECRET: SECRET, POLICY_CHECK_RUNS: "true" },
  setup: (fx) => {
    fx.sim.installation(fx.installationId).permissions = { ...fx.sim.installation(fx.installationId).permissions, checks: "write" };
    fx.sim.git.createBranch("octo-org/app", "main", { files: { "README.md": "# app\n" } });
  },
});

let branches = 0;
/** A pull request on a new branch of octo-org/app whose head changes `path` (a policy file or not). */
const pullRequestChanging = (path: string, text: string) => changing(t.fx.sim, { repository: "octo-org/app", branch: `policy-${++branches}` }, path, text);

async function deliver(pr: { number: number; headSha: string }, action = "opened") {
  const repo = t.fx.sim.repository("octo-org", "app");
  const raw = JSON.stringify({
    action, number: pr.number,
    pull_request: { number: pr.number, head: { sha: pr.headSha, ref: "x" }, base: { ref: "main" } },
    repository: { id: repo.id, name: "app", full_name: "octo-org/app", owner: { login: "octo-org", id: repo.ownerId } },
    installation: { id: t.fx.installationId },
  });
  const response = await fetch(`${t.broker.url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "pull_request", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Waits for the broker's log line that the check ended one way or another (the work runs after the answer). */
async function checkDone(): Promise<void> {
  for (let waited = 0; waited < 10_000; waited += 20) {
    if (t.broker.logs.some((line) => /policy check run (created|skipped|failed)/.test(line))) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("no policy check outcome logged");
}

describe("policy check runs", () => {
  it("an invalid policy in a pull request → a failed check run naming the line; the delivery answered 202", async () => {
    const pr = pullRequestChanging(".github/tokensmith.yml", "rules:\n  - name: release\n    if: {branch: main}\n    permissions: {contents: write}\n");
    expect(await deliver(pr)).toEqual({ status: 202, body: { ok: true, event: "pull_request", queued: true, repository: "octo-org/app", number: pr.number, delivery: expect.any(String) as unknown } });
    await checkDone();
    expect(t.fx.sim.git.checkRuns.at(-1)).toMatchObject({
      repository: "octo-org/app", name: "tokensmith policy", headSha: pr.headSha, status: "completed", conclusion: "failure",
      output: { title: "The policy does not validate", summary: ".github/tokensmith.yml line 3: rules.0.if: unknown key branch" },
    });
  });

  it("a valid policy → success, with the event-less write warning", async () => {
    const pr = pullRequestChanging(".github/tokensmith.yml", "rules:\n  - name: main\n    if: {ref: refs/heads/main}\n    permissions: {contents: write}\n");
    expect((await deliver(pr, "synchronize")).status).toBe(202);
    await checkDone();
    const run = t.fx.sim.git.checkRuns.at(-1)!;
    expect(run).toMatchObject({ headSha: pr.headSha, conclusion: "success" });
    expect(run.output?.summary).toBe(".github/tokensmith.yml: valid repository policy, rules: main\nwarning: .github/tokensmith.yml line 2: rule main grants write without an event condition (a pull_request_target job on the default branch would match)");
  });

  it("a pull request that touches no policy file gets no check run; closed is not checked", async () => {
    const before = t.fx.sim.git.checkRuns.length;
    const pr = pullRequestChanging("src/index.ts", "export {};\n");
    expect((await deliver(pr)).status).toBe(202);
    await checkDone();
    expect(t.fx.sim.git.checkRuns.length).toBe(before);
    expect(await deliver(pr, "closed")).toEqual({ status: 200, body: { ok: true, event: "pull_request", skipped: "not_checked" } });
  });

  it("without checks: write: no check run, one log line", async () => {
    const installation = t.fx.sim.installation(t.fx.installationId);
    const { checks: _checks, ...without } = installation.permissions;
    installation.permissions = without;
    try {
      const before = t.fx.sim.git.checkRuns.length;
      const pr = pullRequestChanging(".github/tokensmith.yml", "rules: [\n");
      expect((await deliver(pr)).status).toBe(202);
      await checkDone();
      expect(t.fx.sim.git.checkRuns.length).toBe(before);
      expect(t.broker.logs.filter((line) => line.includes("does not grant checks: write"))).toHaveLength(1);
    } finally {
      installation.permissions = { ...without, checks: "write" };
    }
  });

  it("POLICY_CHECK_RUNS off: a pull_request delivery is ignored, as the API answers", async () => {
    t.broker.env.POLICY_CHECK_RUNS = "";
    const pr = pullRequestChanging(".github/tokensmith.yml", "rules: [\n");
    expect(await deliver(pr)).toEqual({ status: 200, body: { ok: true, ignored: "pull_request" } });
  });
});
