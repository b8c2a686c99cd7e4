// `tokensmith sandbox --demo`: one release job end to end against a sandbox — the bundled action
// exchanges the job's OIDC token for an installation token (and its post step revokes it), a signed
// commit through /sign, a push delivery to /webhook (update-branch on the open pull requests),
// and /releases. Each step prints one line; tokens are masked.
import { randomUUID } from "node:crypto";
import { signatureFor } from "../webhook/verify-signature.js";
import type { JobClaims, Sandbox } from "./start-sandbox.js";

export type DemoStep = { name: string; ok: boolean; detail: string };

/** The policy the demo writes into octo-org/app (test/policy-sandbox.test.ts uses it too). */
export const DEMO_POLICY = `rules:
  - name: release
    if: {ref: refs/tags/v*, event: push, workflow: .github/workflows/release.yml}
    permissions: {contents: write, pull_requests: write}
  - name: pull-requests
    if: {event: [pull_request, pull_request_target]}
    permissions: {contents: read}
`;

/** `ghs_…(520 chars, masked)`: enough to see that a token came back, and in which format, never the token. */
function maskToken(token: string | undefined): string {
  return token ? `${token.slice(0, 4)}…(${token.length} chars, masked)` : "(none)";
}

export async function runDemo(sandbox: Sandbox, report: (step: DemoStep) => void): Promise<boolean> {
  const repository = `${sandbox.world.organisation}/${sandbox.world.repositories[0]!.name}`;
  const bearer = { authorization: `Bearer ${sandbox.processTriggerSecret}` };
  let allOk = true;
  const step = async (name: string, work: () => Promise<{ ok: boolean; detail: string }>) => {
    let result: { ok: boolean; detail: string };
    try {
      result = await work();
    } catch (error) {
      result = { ok: false, detail: error instanceof Error ? error.message : String(error) };
    }
    allOk &&= result.ok;
    report({ name, ...result });
  };

  await step("action: OIDC token → installation token", async () => {
    const run = await sandbox.runAction({ job: { repository }, post: true });
    const mint = sandbox.platform.mints.at(-1);
    const ok = run.exitCode === 0 && Boolean(run.outputs.token) && mint?.status === 201;
    return { ok, detail: `exit ${run.exitCode}, token ${maskToken(run.outputs.token)} for ${run.outputs.repository ?? "?"}, expires ${run.outputs["expires-at"] ?? "?"}` };
  });
  await step("action post: revoke the token", async () => {
    const revocation = sandbox.platform.revocations.at(-1);
    return { ok: revocation?.status === 204, detail: `DELETE /installation/token answered ${revocation?.status ?? "nothing"}` };
  });

  // Trust policies (docs/policies.md): the repository says a pull-request job reads only and only a
  // tag push of release.yml writes. One narrowed token, one denial with its detail; then removed.
  await sandbox.setPolicy(repository, DEMO_POLICY);
  const exchange = async (job: JobClaims) => {
    const response = await fetch(`${sandbox.brokerUrl}/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ oidcToken: await sandbox.mintJobToken({ repository, ...job }), owner: repository.split("/")[0], repo: repository.split("/")[1] }),
    });
    return { status: response.status, body: (await response.json()) as { token?: string; error?: string; detail?: string } };
  };
  await step("policy: a pull-request job gets a narrowed token", async () => {
    const { status, body } = await exchange({ event_name: "pull_request", ref: "refs/pull/1/merge" });
    const permissions = sandbox.simulator.tokens.get(body.token ?? "")?.permissions ?? {};
    const shown = Object.entries(permissions).map(([name, level]) => `${name}: ${level}`).join(", ");
    return { ok: status === 200 && shown === "contents: read", detail: `${status}, token ${maskToken(body.token)} with ${shown || "nothing"} (rule pull-requests)` };
  });
  await step("policy: a push of a feature branch is denied", async () => {
    const { status, body } = await exchange({ ref: "refs/heads/feat-x", event_name: "push" });
    return { ok: status === 403 && body.error === "policy_denied", detail: `${status} ${body.error ?? "?"}: ${body.detail ?? ""}` };
  });
  await sandbox.setPolicy(repository, null);

  await step("/sign: a signed commit on main", async () => {
    const head = sandbox.simulator.git.head(repository, "main");
    const response = await fetch(`${sandbox.brokerUrl}/sign`, {
      method: "POST",
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({
        repo: repository,
        branch: "main",
        expected_head_oid: head,
        message: { headline: "chore: release 1.2.0" },
        additions: [{ path: "CHANGELOG.md", contents: Buffer.from("## 1.2.0\n- dark mode\n").toString("base64") }],
      }),
    });
    const body = (await response.json()) as { commit?: { oid?: string } };
    const commit = sandbox.platform.commits.at(-1);
    return { ok: response.status === 200 && commit?.signedByGitHub === true, detail: `${response.status}, commit ${body.commit?.oid?.slice(0, 12) ?? "?"} signed by the platform: ${commit?.signedByGitHub ?? false}` };
  });

  await step("/webhook: push to main → update-branch on open pull requests", async () => {
    const open = sandbox.world.repositories[0]!.pullRequests?.filter((pr) => pr.base === "main").length ?? 0;
    const payload = JSON.stringify({
      ref: "refs/heads/main",
      before: "0".repeat(40),
      after: sandbox.simulator.git.head(repository, "main"),
      created: false,
      deleted: false,
      forced: false,
      repository: { name: repository.split("/")[1], full_name: repository, owner: { login: sandbox.world.organisation } },
      installation: { id: sandbox.installationId },
      sender: { login: "octocat" },
    });
    const response = await fetch(`${sandbox.brokerUrl}/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(sandbox.webhookSecret, payload) },
      body: payload,
    });
    await response.arrayBuffer();
    // The broker answers first and works after: wait (briefly) for the queued job's calls.
    const deadline = Date.now() + 5000;
    while (sandbox.platform.updates.filter((u) => u.repository === repository).length < open && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const updates = sandbox.platform.updates.filter((u) => u.repository === repository);
    const ok = response.status === 202 && updates.length === open && updates.every((u) => u.status === 202);
    return { ok, detail: `${response.status} queued; ${updates.length} of ${open} open pull requests updated (${updates.map((u) => `#${u.number} ${u.status}`).join(", ") || "none"})` };
  });

  await step("/releases: latest release of every repository", async () => {
    const response = await fetch(`${sandbox.brokerUrl}/releases`, { headers: bearer });
    const body = (await response.json()) as { repos?: Array<{ repo: string; latest: { tag: string } | null }> };
    const rows = body.repos ?? [];
    return { ok: response.status === 200, detail: `${response.status}: ${rows.map((r) => `${r.repo} ${r.latest?.tag ?? "(none)"}`).join(", ")}` };
  });
  return allOk;
}
