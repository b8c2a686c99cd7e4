// A tag-release job through the sandbox, as a tester writes it (issue 41): the bundled action gets
// the job's token, the job creates its release and its tag with that token over REST, and the
// broker's `/releases` crawl (GraphQL) lists the new release as the repository's latest.
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { startSandbox, type Sandbox } from "../server/sandbox/index.js";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(async () => {
  await sandbox.close();
});

const github = async (token: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${sandbox.platformUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, accept: "application/vnd.github+json", ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

it("token → POST /releases with the job's token → the release is the broker's latest for the repository", async () => {
  const run = await sandbox.runAction({ job: { repository: "octo-org/app", ref: "refs/tags/v1.2.0" } });
  expect(run.exitCode).toBe(0);
  const token = run.outputs.token!;
  const head = sandbox.simulator.git.head("octo-org/app", "main");

  // The README's own step: the bot's user, for git's author line.
  const slug = sandbox.simulator.apps.values().next().value!.slug;
  const bot = await github(token, "GET", `/users/${encodeURIComponent(`${slug}[bot]`)}`);
  expect(bot).toMatchObject({ status: 200, body: { login: `${slug}[bot]`, type: "Bot" } });

  const notes = await github(token, "POST", "/repos/octo-org/app/releases/generate-notes", { tag_name: "v1.2.0" });
  expect(notes).toMatchObject({ status: 200, body: { name: "v1.2.0", body: expect.stringContaining("v1.1.0...v1.2.0") } });
  const created = await github(token, "POST", "/repos/octo-org/app/releases", { tag_name: "v1.2.0", name: "v1.2.0", body: notes.body.body });
  expect(created).toMatchObject({ status: 201, body: { tag_name: "v1.2.0", draft: false, author: { login: `${slug}[bot]` } } });
  // Publishing made the tag at the default branch's head.
  expect(await github(token, "GET", "/repos/octo-org/app/git/ref/tags/v1.2.0")).toMatchObject({ status: 200, body: { ref: "refs/tags/v1.2.0", object: { sha: head, type: "commit" } } });
  expect(await github(token, "GET", "/repos/octo-org/app/releases/latest")).toMatchObject({ status: 200, body: { id: created.body.id } });

  const releases = await fetch(`${sandbox.brokerUrl}/releases`, { headers: { authorization: `Bearer ${sandbox.processTriggerSecret}` } });
  expect(releases.status).toBe(200);
  const listed = (await releases.json()) as { repos: Array<{ repo: string; latest: { tag: string } | null }> };
  expect(listed.repos.find((r) => r.repo === "octo-org/app")?.latest?.tag).toBe("v1.2.0");
  expect(sandbox.platform.releases.filter((r) => r.repository === "octo-org/app").map((r) => r.tag)).toContain("v1.2.0");
});

it("a job token without contents: write gets GitHub's 403 and creates nothing", async () => {
  const run = await sandbox.runAction({ job: { repository: "octo-org/app" }, inputs: { "permission-contents": "read" } });
  expect(run.exitCode).toBe(0);
  const before = sandbox.simulator.releases.list("octo-org/app").length;
  const refused = await github(run.outputs.token!, "POST", "/repos/octo-org/app/releases", { tag_name: "v9.9.9" });
  expect(refused).toMatchObject({ status: 403, body: { message: "Resource not accessible by integration" } });
  expect(sandbox.simulator.releases.list("octo-org/app")).toHaveLength(before);
});
