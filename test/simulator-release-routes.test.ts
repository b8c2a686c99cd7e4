// The simulator's routes for what a release job does with its token (issue 41), over HTTP: they
// keep state in the simulator's git model and release store (what one call makes, the next call
// and GraphQL see), and refuse as GitHub does (404 for a repository the token does not cover, 403
// "Resource not accessible by integration" without `contents: write`, 409/422 for stale writes).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createSimulator, type Simulator } from "../simulator/index.js";

let sim: Simulator;
let installationId: number;
const REPO = "octo-org/app";

beforeAll(async () => {
  sim = await createSimulator();
  const app = sim.createApp();
  installationId = sim.addInstallation({ appId: app.id, account: "octo-org", permissions: { contents: "write", metadata: "read" }, repositories: ["app"] });
  sim.git.createBranch(REPO, "main", { files: { "README.md": "# app\n", "src/index.js": "export {};\n" } });
});
afterAll(async () => {
  await sim.close();
});

const token = (permissions: Record<string, string> = { contents: "write" }) => sim.issueToken(installationId, { permissions });
async function call(method: string, path: string, body?: unknown, auth = token()) {
  const response = await fetch(`${sim.apiBase}${path}`, {
    method,
    headers: { authorization: `token ${auth}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as Record<string, any> };
}

describe("who may call", () => {
  const writes: Array<[string, string, unknown]> = [
    ["POST", `/repos/${REPO}/releases`, { tag_name: "v0.0.1" }],
    ["POST", `/repos/${REPO}/releases/generate-notes`, { tag_name: "v0.0.1" }],
    ["POST", `/repos/${REPO}/git/refs`, { ref: "refs/tags/x", sha: "0".repeat(40) }],
    ["PATCH", `/repos/${REPO}/git/refs/heads/main`, { sha: "0".repeat(40) }],
    ["DELETE", `/repos/${REPO}/git/refs/heads/main`, undefined],
    ["POST", `/repos/${REPO}/git/tags`, { tag: "x", message: "x", object: "0".repeat(40), type: "commit" }],
    ["POST", `/repos/${REPO}/git/blobs`, { content: "x" }],
    ["POST", `/repos/${REPO}/git/trees`, { tree: [{ path: "x", mode: "100644", type: "blob", content: "x" }] }],
    ["POST", `/repos/${REPO}/git/commits`, { message: "x", tree: "0".repeat(40) }],
    ["PUT", `/repos/${REPO}/contents/x.txt`, { message: "x", content: "eA==" }],
  ];
  it.each(writes)("%s %s: 403 with contents read, 404 on a repository the token does not cover", async (method, path, body) => {
    const head = sim.git.head(REPO, "main");
    expect(await call(method, path, body, token({ contents: "read" }))).toMatchObject({ status: 403, body: { message: "Resource not accessible by integration" } });
    expect((await call(method, path.replace(REPO, "octo-org/elsewhere"), body)).status).toBe(404);
    expect(sim.git.head(REPO, "main")).toBe(head);
    expect(sim.releases.list(REPO)).toHaveLength(0);
  });

  it("reads need contents: a token with only metadata gets 403; no token gets 401", async () => {
    expect((await call("GET", `/repos/${REPO}/releases`, undefined, token({ metadata: "read" }))).status).toBe(403);
    expect((await fetch(`${sim.apiBase}/repos/${REPO}/git/ref/heads/main`)).status).toBe(401);
  });
});

describe("state", () => {
  it("blob → tree → commit → ref update moves the branch; the contents API and GraphQL see the file", async () => {
    const parent = sim.git.head(REPO, "main")!;
    const blob = await call("POST", `/repos/${REPO}/git/blobs`, { content: Buffer.from("1.2.0\n").toString("base64"), encoding: "base64" });
    expect(blob.status).toBe(201);
    const tree = await call("POST", `/repos/${REPO}/git/trees`, { base_tree: parent, tree: [{ path: "VERSION", mode: "100644", type: "blob", sha: blob.body.sha }] });
    expect(tree.status).toBe(201);
    expect(tree.body.tree.map((e: { path: string }) => e.path)).toEqual(["README.md", "VERSION", "src", "src/index.js"]);
    const commit = await call("POST", `/repos/${REPO}/git/commits`, { message: "chore: 1.2.0\n\nwhy", tree: tree.body.sha, parents: [parent] });
    expect(commit).toMatchObject({ status: 201, body: { message: "chore: 1.2.0\n\nwhy", verification: { verified: true }, parents: [{ sha: parent }] } });
    expect(sim.git.head(REPO, "main")).toBe(parent); // a commit alone moves no branch
    const moved = await call("PATCH", `/repos/${REPO}/git/refs/heads/main`, { sha: commit.body.sha });
    expect(moved).toMatchObject({ status: 200, body: { ref: "refs/heads/main", object: { sha: commit.body.sha } } });
    expect(sim.git.files(REPO, "main").VERSION).toBe("1.2.0\n");
    const read = await call("GET", `/repos/${REPO}/contents/VERSION`);
    expect(Buffer.from(read.body.content, "base64").toString()).toBe("1.2.0\n");
    // Going back is no fast forward unless forced.
    expect(await call("PATCH", `/repos/${REPO}/git/refs/heads/main`, { sha: parent })).toMatchObject({ status: 422, body: { message: "Update is not a fast forward" } });
    expect((await call("PATCH", `/repos/${REPO}/git/refs/heads/main`, { sha: parent, force: true })).status).toBe(200);
    expect(sim.git.head(REPO, "main")).toBe(parent);
    expect((await call("PATCH", `/repos/${REPO}/git/refs/heads/main`, { sha: commit.body.sha })).status).toBe(200);
  });

  it("contents PUT: a new file is 201, an update needs the current sha (422 without, 409 stale)", async () => {
    const made = await call("PUT", `/repos/${REPO}/contents/CHANGELOG.md`, { message: "docs: changelog", content: Buffer.from("## 1.2.0\n").toString("base64") });
    expect(made).toMatchObject({ status: 201, body: { content: { path: "CHANGELOG.md" }, commit: { verification: { verified: true } } } });
    expect(sim.git.head(REPO, "main")).toBe(made.body.commit.sha);
    const update = { message: "docs: more", content: Buffer.from("## 1.3.0\n").toString("base64") };
    expect((await call("PUT", `/repos/${REPO}/contents/CHANGELOG.md`, update)).status).toBe(422);
    expect((await call("PUT", `/repos/${REPO}/contents/CHANGELOG.md`, { ...update, sha: "0".repeat(40) })).status).toBe(409);
    expect((await call("PUT", `/repos/${REPO}/contents/CHANGELOG.md`, { ...update, sha: made.body.content.sha })).status).toBe(200);
    expect(sim.git.files(REPO, "main")["CHANGELOG.md"]).toBe("## 1.3.0\n");
    expect((await call("PUT", `/repos/${REPO}/contents/x.md`, { ...update, branch: "absent" })).status).toBe(404);
  });

  it("refs and annotated tags: created, listed, deleted; a taken name is 422", async () => {
    const head = sim.git.head(REPO, "main")!;
    const tag = await call("POST", `/repos/${REPO}/git/tags`, { tag: "v1.2.0", message: "1.2.0", object: head, type: "commit" });
    expect(tag.status).toBe(201);
    expect((await call("POST", `/repos/${REPO}/git/refs`, { ref: "refs/tags/v1.2.0", sha: tag.body.sha })).status).toBe(201);
    expect(await call("POST", `/repos/${REPO}/git/refs`, { ref: "refs/tags/v1.2.0", sha: head })).toMatchObject({ status: 422, body: { message: "Reference already exists" } });
    expect(await call("GET", `/repos/${REPO}/git/ref/tags/v1.2.0`)).toMatchObject({ status: 200, body: { object: { type: "tag", sha: tag.body.sha } } });
    expect(await call("GET", `/repos/${REPO}/git/tags/${tag.body.sha}`)).toMatchObject({ status: 200, body: { tag: "v1.2.0", object: { sha: head } } });
    const matching = await call("GET", `/repos/${REPO}/git/matching-refs/tags/v1`);
    expect(matching.body.map((r: { ref: string }) => r.ref)).toEqual(["refs/tags/v1.2.0"]);
    expect((await call("DELETE", `/repos/${REPO}/git/refs/tags/v1.2.0`)).status).toBe(204);
    expect((await call("GET", `/repos/${REPO}/git/ref/tags/v1.2.0`)).status).toBe(404);
    expect((await call("DELETE", `/repos/${REPO}/git/refs/tags/v1.2.0`)).status).toBe(422);
  });

  it("releases: a draft is seen only with write, published by PATCH (tag made then); GraphQL lists what REST made", async () => {
    const draft = await call("POST", `/repos/${REPO}/releases`, { tag_name: "v2.0.0", draft: true, target_commitish: "main" });
    expect(draft).toMatchObject({ status: 201, body: { draft: true, published_at: null } });
    expect((await call("GET", `/repos/${REPO}/releases/${draft.body.id}`, undefined, token({ contents: "read" }))).status).toBe(404);
    expect((await call("GET", `/repos/${REPO}/git/ref/tags/v2.0.0`)).status).toBe(404);
    const published = await call("PATCH", `/repos/${REPO}/releases/${draft.body.id}`, { draft: false, body: "notes" });
    expect(published).toMatchObject({ status: 200, body: { draft: false, body: "notes", published_at: expect.any(String) } });
    expect((await call("GET", `/repos/${REPO}/git/ref/tags/v2.0.0`)).status).toBe(200);
    expect(await call("GET", `/repos/${REPO}/releases/tags/v2.0.0`)).toMatchObject({ status: 200, body: { id: draft.body.id } });
    expect((await call("POST", `/repos/${REPO}/releases`, { tag_name: "v2.0.0" })).status).toBe(422);
    expect(await call("POST", `/repos/${REPO}/releases`, { tag_name: "v3.0.0", target_commitish: "no-such-branch" })).toMatchObject({ status: 422, body: { errors: [{ field: "target_commitish" }] } });

    const response = await fetch(sim.graphqlUrl, {
      method: "POST",
      headers: { authorization: `bearer ${token()}`, "content-type": "application/json" },
      body: JSON.stringify({ query: '{ repository(owner: "octo-org", name: "app") { latestRelease { tagName } } }' }),
    });
    expect(await response.json()).toEqual({ data: { repository: { latestRelease: { tagName: "v2.0.0" } } } });
  });

  it("rate_limit counts the installation's requests; an unknown user is 404", async () => {
    const first = await call("GET", "/rate_limit");
    await call("GET", `/repos/${REPO}/releases`);
    const second = await call("GET", "/rate_limit");
    expect(second.body.rate.used).toBeGreaterThan(first.body.rate.used);
    expect(second.body.rate.remaining).toBe(second.body.rate.limit - second.body.rate.used);
    expect((await call("GET", "/users/nobody[bot]")).status).toBe(404);
  });
});
