// Trust policies end to end in the sandbox (`tokensmith/testing`): setPolicy on the default branch,
// the bundled action (dist/) with policy-rule, a denial's detail in the step's error, the owner
// policy, another repository's consent (the repositories input), and `sandbox --demo`'s narrowed
// token and denial.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { DEMO_POLICY, runDemo, type DemoStep } from "../server/sandbox/run-demo.js";
import { startSandbox, type Sandbox } from "../server/sandbox/index.js";

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(async () => {
  await sandbox.close();
});

const permissionsOf = (token: string | undefined) => sandbox.simulator.tokens.get(token ?? "")?.permissions;

describe("the bundled action against a policy", () => {
  it("a pull-request job gets contents read; a tag job naming its rule (policy-rule) gets the release grant", async () => {
    await sandbox.setPolicy("octo-org/app", DEMO_POLICY);
    const pr = await sandbox.runAction({ job: { event_name: "pull_request", ref: "refs/pull/1/merge" } });
    expect(pr.exitCode).toBe(0);
    expect(permissionsOf(pr.outputs.token)).toEqual({ contents: "read" });
    const tag = await sandbox.runAction({ job: { ref: "refs/tags/v1.2.0", event_name: "push" }, inputs: { "policy-rule": "release" } });
    expect(tag.exitCode).toBe(0);
    expect(permissionsOf(tag.outputs.token)).toEqual({ contents: "write", pull_requests: "write" });
  });

  it("a denied job fails the step with the hint and the broker's detail, escaped on one line", async () => {
    await sandbox.setPolicy("octo-org/app", DEMO_POLICY);
    const run = await sandbox.runAction({ job: { ref: "refs/heads/feat-x", event_name: "push" } });
    expect(run.exitCode).not.toBe(0);
    const line = run.log.find((l) => l.includes("policy_denied"));
    expect(line).toContain('The broker says: "rule release: ref is refs/heads/feat-x, wants refs/tags/v*; rule pull-requests: event is push, wants one of pull_request, pull_request_target"');
    expect(line).toContain("error: policy_denied, HTTP 403");
  });

  it("policy-rule that is not a rule name fails the step before any request", async () => {
    const run = await sandbox.runAction({ inputs: { "policy-rule": "Release!" } });
    expect(run.exitCode).not.toBe(0);
    expect(run.log.join("\n")).toContain('policy-rule "Release!" is not a rule name');
  });

  it("an owner policy set through setPolicy({ owner: true }) caps every repository; removed again, the repository's own applies", async () => {
    await sandbox.setPolicy("octo-org/app", DEMO_POLICY);
    await sandbox.setPolicy("octo-org", "rules:\n  - name: org-read\n    permissions: {contents: read}\n", { owner: true });
    const capped = await sandbox.runAction({ job: { ref: "refs/tags/v2.0.0", event_name: "push" } });
    expect(permissionsOf(capped.outputs.token)).toEqual({ contents: "read" });
    await sandbox.setPolicy("octo-org", null, { owner: true });
    const full = await sandbox.runAction({ job: { ref: "refs/tags/v2.0.0", event_name: "push" } });
    expect(permissionsOf(full.outputs.token)).toEqual({ contents: "write", pull_requests: "write" });
    await sandbox.setPolicy("octo-org/app", null);
  });
});

describe("other repositories (the repositories input) in the sandbox", () => {
  it("docs consents through setPolicy: one token for app and docs; without its consent the step fails naming docs", async () => {
    await sandbox.setPolicy("octo-org/docs", "rules:\n  - name: from-app\n    if: {repository: octo-org/app, event: push, ref: refs/tags/v*}\n    permissions: {contents: write}\n");
    const run = await sandbox.runAction({ job: { ref: "refs/tags/v1.2.0", event_name: "push" }, inputs: { repositories: "docs" } });
    expect(run.exitCode).toBe(0);
    expect(run.outputs.repositories).toBe("octo-org/app,octo-org/docs");
    expect(sandbox.platform.mints.at(-1)).toMatchObject({ repositories: ["app", "docs"], permissions: { contents: "write" } });
    expect(permissionsOf(run.outputs.token)).toEqual({ contents: "write" });

    await sandbox.setPolicy("octo-org/docs", null);
    const denied = await sandbox.runAction({ job: { ref: "refs/tags/v1.2.0", event_name: "push" }, inputs: { repositories: "docs" } });
    expect(denied.exitCode).not.toBe(0);
    const line = denied.log.find((l) => l.includes("policy_denied"));
    expect(line).toContain('The broker says: "repository octo-org/docs does not consent to a token for octo-org/app from this job');
  });
});

describe("sandbox --demo", () => {
  it("shows one narrowed token and one denial with its detail, then the rest of the demo as before", async () => {
    const steps: DemoStep[] = [];
    expect(await runDemo(sandbox, (step) => steps.push(step))).toBe(true);
    const narrowed = steps.find((s) => s.name === "policy: a pull-request job gets a narrowed token")!;
    expect(narrowed).toMatchObject({ ok: true, detail: expect.stringMatching(/^200, token .*masked\) with contents: read \(rule pull-requests\)$/) as unknown });
    expect(steps.find((s) => s.name === "policy: a push of a feature branch is denied")).toEqual({
      name: "policy: a push of a feature branch is denied",
      ok: true,
      detail: "403 policy_denied: rule release: ref is refs/heads/feat-x, wants refs/tags/v*; rule pull-requests: event is push, wants one of pull_request, pull_request_target",
    });
    expect(steps.every((s) => s.ok)).toBe(true);
  });
});
