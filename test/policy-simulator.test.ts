// The simulator's repository contents (what the broker's policy reader calls) and the OIDC claims
// GitHub really emits: the answer's shape checked against GitHub's OpenAPI description.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { decodeJwt } from "jose";
import { createSimulator, type Simulator } from "../simulator/index.js";
import { githubRestDescription } from "../simulator/openapi-validate.js";
import { blobSha } from "../simulator/rest-contents-routes.js";

let sim: Simulator;
let installationId: number;
const POLICY = "rules:\n  - name: all\n    permissions: {contents: read}\n";

beforeAll(async () => {
  sim = await createSimulator();
  const app = sim.createApp();
  installationId = sim.addInstallation({ appId: app.id, account: "octo-org", permissions: { contents: "read", metadata: "read", issues: "read" }, repositories: ["app", "other"] });
  sim.git.createBranch("octo-org/app", "main", { files: { "README.md": "# app\n" } });
});
afterAll(async () => {
  await sim.close();
});

async function get(path: string, token: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${sim.apiBase}${path}`, { headers: { authorization: `token ${token}`, accept: "application/vnd.github+json", ...headers } });
  const text = await res.text();
  return { status: res.status, etag: res.headers.get("etag"), text, body: text === "" ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

describe("GET /repos/{owner}/{repo}/contents/{path}", () => {
  it("answers GitHub's content-file object for a file on the default branch, valid under the OpenAPI description", async () => {
    sim.git.setFile("octo-org/app", ".github/tokensmith.yml", POLICY);
    const answer = await get("/repos/octo-org/app/contents/.github/tokensmith.yml", sim.issueToken(installationId, { permissions: { contents: "read" } }));
    expect(answer.status).toBe(200);
    const operation = githubRestDescription().operation("GET", "/repos/{owner}/{repo}/contents/{path}");
    expect(operation?.operationId).toBe("repos/get-content");
    expect(operation!.validateResponse(200, answer.body)).toEqual([]);
    expect(operation!.validateResponse(200, { ...answer.body, sha: 5 })).not.toEqual([]); // the judge can refuse
    expect(answer.body).toMatchObject({ type: "file", encoding: "base64", path: ".github/tokensmith.yml", name: "tokensmith.yml", size: POLICY.length, sha: blobSha(Buffer.from(POLICY)) });
    expect(Buffer.from(String(answer.body!.content), "base64").toString("utf8")).toBe(POLICY);
    expect(answer.etag).toBe(`W/"${answer.body!.sha as string}"`);
  });

  it("If-None-Match with the current ETag → 304 without a body; a changed file → 200 with a new ETag", async () => {
    sim.git.setFile("octo-org/app", ".github/tokensmith.yml", POLICY);
    const token = sim.issueToken(installationId);
    const first = await get("/repos/octo-org/app/contents/.github/tokensmith.yml", token);
    const again = await get("/repos/octo-org/app/contents/.github/tokensmith.yml", token, { "if-none-match": first.etag! });
    expect(again).toMatchObject({ status: 304, text: "", etag: first.etag });
    sim.git.setFile("octo-org/app", ".github/tokensmith.yml", `${POLICY}# changed\n`);
    const changed = await get("/repos/octo-org/app/contents/.github/tokensmith.yml", token, { "if-none-match": first.etag! });
    expect(changed.status).toBe(200);
    expect(changed.etag).not.toBe(first.etag);
  });

  it("404 for a missing file, a deleted one, a branch that does not exist, a repository the token does not reach, a token without contents", async () => {
    const token = sim.issueToken(installationId);
    const notFound = { status: 404, body: { message: "Not Found", documentation_url: "https://docs.github.com/rest/repos/contents#get-repository-content", status: "404" } };
    expect(await get("/repos/octo-org/app/contents/.github/nothing.yml", token)).toMatchObject(notFound);
    sim.git.setFile("octo-org/app", ".github/gone.yml", "x: 1\n");
    sim.git.setFile("octo-org/app", ".github/gone.yml", null);
    expect(await get("/repos/octo-org/app/contents/.github/gone.yml", token)).toMatchObject(notFound);
    expect(await get("/repos/octo-org/other/contents/README.md", token)).toMatchObject(notFound);
    expect(await get("/repos/octo-org/app/contents/README.md?ref=nope", token)).toMatchObject(notFound);
    expect(await get("/repos/octo-org/app/contents/README.md", sim.issueToken(installationId, { repositories: ["other"] }))).toMatchObject(notFound);
    expect(await get("/repos/octo-org/app/contents/README.md", sim.issueToken(installationId, { permissions: { issues: "read" } }))).toMatchObject(notFound);
    expect((await get("/repos/octo-org/app/contents/README.md", token)).status).toBe(200);
  });

  it("a repository that does not exist is a 404, and reading it does not create it (an owner's .github on an all-repositories installation)", async () => {
    const everyRepository = sim.addInstallation({ appId: sim.createApp().id, account: "lone-org", permissions: { contents: "read", metadata: "read" }, repositories: "all" });
    const token = sim.issueToken(everyRepository);
    expect((await get("/repos/lone-org/.github/contents/.github/tokensmith-org.yml", token)).status).toBe(404);
    expect(sim.findRepository("lone-org", ".github")).toBeUndefined();
  });
});

describe("OIDC claims as GitHub emits them", () => {
  it("a push token carries workflow_ref, job_workflow_ref, event_name, ref_type, runner_environment, actor; no environment unless the job has one", async () => {
    const claims = decodeJwt(await sim.oidc.sign());
    expect(claims).toMatchObject({
      workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/main",
      job_workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/main",
      event_name: "push", ref_type: "branch", runner_environment: "github-hosted", actor: "octocat", ref: "refs/heads/main",
      repository_visibility: "private",
    });
    expect(claims).not.toHaveProperty("environment");
  });

  it("ref_type follows ref and job_workflow_ref follows workflow_ref unless the test sets them", async () => {
    const tag = decodeJwt(await sim.oidc.sign({ ref: "refs/tags/v1.0.0", workflow_ref: "octo-org/app/.github/workflows/tag.yml@refs/tags/v1.0.0" }));
    expect(tag).toMatchObject({ ref_type: "tag", job_workflow_ref: "octo-org/app/.github/workflows/tag.yml@refs/tags/v1.0.0" });
    const reusable = decodeJwt(await sim.oidc.sign({ job_workflow_ref: "octo-org/shared/.github/workflows/release.yml@refs/heads/main", environment: "production" }));
    expect(reusable).toMatchObject({ job_workflow_ref: "octo-org/shared/.github/workflows/release.yml@refs/heads/main", environment: "production" });
  });
});
