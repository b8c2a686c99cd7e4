// The tag-release job with node:test: `node --test` on the compiled build/, or on these sources
// with Node 24's type stripping (`npm run test:node-ts`).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startSandbox, type Mint, type Sandbox } from "tokensmith/testing";
import { tagRelease } from "../release-job.ts";

let sandbox: Sandbox;
before(async () => {
  sandbox = await startSandbox();
});
after(() => sandbox.close());

test("a push of v1.2.0 gets the job's token, creates the release, and the broker's /releases lists it", async () => {
  const { run, created, listed } = await tagRelease(sandbox, "octo-org/app", "v1.2.0");
  assert.equal(run.outputs.repository, "octo-org/app");
  assert.equal(run.outputs["installation-id"], String(sandbox.installationId));
  // The job's own mint (the broker's policy reader and the /releases crawl mint too).
  const mint: Mint | undefined = sandbox.platform.mints.filter((m) => m.purpose === "repositories").at(-1);
  assert.deepEqual(mint?.repositories, ["app"]);

  assert.equal(created.status, 201);
  assert.equal(created.release.tag_name, "v1.2.0");
  assert.equal(created.release.draft, false);
  assert.equal(created.release.author.login, `${run.outputs["app-slug"]}[bot]`);

  assert.equal(listed.status, 200);
  const app = listed.body.repos.find((entry) => entry.repo === "octo-org/app");
  assert.equal(app?.latest?.tag, "v1.2.0");
  assert.ok(sandbox.platform.releases.some((release) => release.repository === "octo-org/app" && release.tag === "v1.2.0"));
});

test("a token without contents: write is refused by the platform, and no release is made", async () => {
  const run = await sandbox.runAction({ job: { repository: "octo-org/docs", ref: "refs/tags/v1.0.0" }, inputs: { "permission-contents": "read" } });
  assert.equal(run.exitCode, 0, run.log.join("\n"));
  const answer = await fetch(`${sandbox.platformUrl}/repos/octo-org/docs/releases`, {
    method: "POST",
    headers: { authorization: `Bearer ${run.outputs.token ?? ""}`, "content-type": "application/json" },
    body: JSON.stringify({ tag_name: "v1.0.0" }),
  });
  assert.equal(answer.status, 403);
  assert.ok(!sandbox.platform.releases.some((release) => release.repository === "octo-org/docs" && release.tag === "v1.0.0"));
});
