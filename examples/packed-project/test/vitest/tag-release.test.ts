// The tag-release job with vitest (`npm run test:vitest`).
import { afterAll, beforeAll, expect, test } from "vitest";
import { startSandbox, type ErrorBody, type Sandbox } from "tokensmith/testing";
import { tagRelease } from "../release-job.ts";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox.close());

test("a push of v2.0.0 gets the job's token, creates the release, and the broker's /releases lists it", async () => {
  const { run, created, listed } = await tagRelease(sandbox, "octo-org/app", "v2.0.0");
  expect(run.outputs).toMatchObject({ repository: "octo-org/app", repositories: "octo-org/app" });
  expect(JSON.parse(run.outputs.permissions ?? "{}")).toMatchObject({ contents: "write" });
  expect(created).toMatchObject({ status: 201, release: { tag_name: "v2.0.0", draft: false, prerelease: false } });
  expect(listed.status).toBe(200);
  expect(listed.body.repos.find((entry) => entry.repo === "octo-org/app")?.latest).toMatchObject({ tag: "v2.0.0", draft: false });
});

test("a job asking for another repository's token gets the broker's error body, not a token", async () => {
  const oidcToken = await sandbox.mintJobToken({ repository: "octo-org/app" });
  const answer = await fetch(`${sandbox.brokerUrl}/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ oidcToken, owner: "octo-org", repo: "docs" }),
  });
  const body = (await answer.json()) as ErrorBody;
  expect(answer.status).toBe(403);
  expect(body.error).toBe("repo_mismatch");
});
