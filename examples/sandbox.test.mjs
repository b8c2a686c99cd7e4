// Test your release workflow against a sandbox: a fake CI platform and a tokensmith broker on
// loopback. Run with `node --test examples/sandbox.test.mjs` (CI runs this file as written).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startSandbox } from "tokensmith/testing";

let sandbox;
before(async () => {
  sandbox = await startSandbox(); // the default world: octo-org/app, docs, tools
});
after(() => sandbox.close());

test("the release job's action gets a token for its own repository", async () => {
  const run = await sandbox.runAction({ job: { repository: "octo-org/app", ref: "refs/tags/v1.2.0" } });
  assert.equal(run.exitCode, 0, run.log.join("\n"));
  assert.equal(run.outputs.repository, "octo-org/app");
  assert.ok(run.outputs.token);
  assert.deepEqual(sandbox.platform.mints.at(-1).repositories, ["app"]);
});

test("a job's OIDC token buys an installation token at /token", async () => {
  const oidcToken = await sandbox.mintJobToken({ repository: "octo-org/docs", workflow: "release" });
  const response = await fetch(`${sandbox.brokerUrl}/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ oidcToken, owner: "octo-org", repo: "docs" }),
  });
  assert.equal(response.status, 200);
  assert.equal((await response.json()).repository, "octo-org/docs");
});

test("a release commit through /sign is signed by the platform", async () => {
  const head = sandbox.simulator.git.head("octo-org/app", "main");
  const response = await fetch(`${sandbox.brokerUrl}/sign`, {
    method: "POST",
    headers: { authorization: `Bearer ${sandbox.processTriggerSecret}`, "content-type": "application/json" },
    body: JSON.stringify({
      repo: "octo-org/app",
      branch: "main",
      expected_head_oid: head,
      message: { headline: "chore: release 1.2.0" },
      additions: [{ path: "VERSION", contents: Buffer.from("1.2.0\n").toString("base64") }],
    }),
  });
  assert.equal(response.status, 200);
  assert.equal(sandbox.platform.commits.at(-1).signedByGitHub, true);
});
