// POST /sign over HTTP, through the broker, to the simulator's GraphQL createCommitOnBranch.
import { describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { branchNameProblem, commitPathProblem } from "../server/sign/read-sign-request.js";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const SECRET = "sign-trigger-secret-0123456789-01234";
const REPO = "octo-org/app";
let branchCounter = 0;
const secrets: string[] = [SECRET];

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

const t = brokerPerTest({ secrets, env: { PROCESS_TRIGGER_SECRET: SECRET }, graphql: true });

/** A fresh branch per test, so tests never see each other's commits. */
function freshBranch(files: Record<string, string> = { "README.md": "# app\n", "CHANGELOG.md": "old\n" }): { branch: string; head: string } {
  const branch = `release-${++branchCounter}`;
  return { branch, head: t.fx.sim.git.createBranch(REPO, branch, { files }) };
}

function signBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    repo: REPO,
    branch: "main",
    expected_head_oid: "a".repeat(40),
    message: { headline: "chore: release 1.2.3" },
    additions: [{ path: "VERSION", contents: b64("1.2.3\n") }],
    ...overrides,
  };
}

const sign = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${SECRET}` }) => postJson(`${t.broker.url}/sign`, body, headers);
const graphqlCalls = () => t.fx.sim.requests.filter((r) => r.method === "POST" && r.path === "/graphql");
const mints = () => t.fx.sim.requests.filter((r) => r.method === "POST" && /\/access_tokens$/.test(r.path));
const logged = (needle: string) => t.broker.logs.some((line) => line.includes(needle));

describe("POST /sign success", () => {
  it("creates the commit with createCommitOnBranch and answers the platform's commit object", async () => {
    const { branch, head } = freshBranch();
    const { status, body, headers } = await sign(
      signBody({
        branch,
        expected_head_oid: head,
        message: { headline: "chore: release 1.2.3", body: "Release notes.\n\nSigned by the App." },
        additions: [{ path: "VERSION", contents: b64("1.2.3\n") }, { path: "CHANGELOG.md", contents: b64("new\n") }],
        deletions: [{ path: "README.md" }],
      }),
    );
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(["commit", "ok"]);
    expect(body.ok).toBe(true);
    expect(headers.get("cache-control")).toBe("no-store");

    const newHead = t.fx.sim.git.head(REPO, branch)!;
    const platformCommit = (graphqlCalls()[0]!.response!.body as { data: { createCommitOnBranch: { commit: unknown } } }).data.createCommitOnBranch.commit;
    expect(body.commit).toEqual(platformCommit);
    expect((body.commit as { oid: string }).oid).toBe(newHead);
    const created = t.fx.sim.git.commit(newHead)!;
    expect(created.parents).toEqual([head]);
    expect(created.headline).toBe("chore: release 1.2.3");
    expect(created.body).toBe("Release notes.\n\nSigned by the App.");
    expect(created.signedByGitHub).toBe(true);
    expect(t.fx.sim.git.files(REPO, branch)).toEqual({ "CHANGELOG.md": "new\n", VERSION: "1.2.3\n" });
  });

  it("sends the mutation's input exactly as the platform documents it", async () => {
    const { branch, head } = freshBranch();
    const { status } = await sign(
      signBody({
        branch,
        expected_head_oid: head,
        message: { headline: "feat: x", body: "body text" },
        additions: [{ path: "a/b.txt", contents: b64("x"), extra: "dropped" }],
        deletions: [{ path: "CHANGELOG.md" }],
      }),
    );
    expect(status).toBe(200);
    const [call] = graphqlCalls();
    const sent = call!.body as { query: string; variables: Record<string, unknown> };
    expect(sent.query).toMatch(/createCommitOnBranch\(input: \$input\)/);
    expect(sent.variables).toEqual({
      input: {
        branch: { repositoryNameWithOwner: REPO, branchName: branch },
        expectedHeadOid: head,
        message: { headline: "feat: x", body: "body text" },
        fileChanges: { additions: [{ path: "a/b.txt", contents: b64("x") }], deletions: [{ path: "CHANGELOG.md" }] },
      },
    });
  });

  it("omits message.body and an empty list when they are not given", async () => {
    const { branch, head } = freshBranch();
    const { status } = await sign(signBody({ branch, expected_head_oid: head, deletions: [] }));
    expect(status).toBe(200);
    const input = (graphqlCalls()[0]!.body as { variables: { input: Record<string, unknown> } }).variables.input;
    expect(input.message).toEqual({ headline: "chore: release 1.2.3" });
    expect(input.fileChanges).toEqual({ additions: [{ path: "VERSION", contents: b64("1.2.3\n") }] });
  });

  it("mints with contents: write only, whatever TOKEN_PERMISSIONS says, and uses that token", async () => {
    t.broker.env.TOKEN_PERMISSIONS = "issues=write,pull_requests=write,contents=read";
    const { branch, head } = freshBranch();
    const { status } = await sign(signBody({ branch, expected_head_oid: head }));
    expect(status).toBe(200);
    const [mint] = mints();
    expect(mint!.body).toEqual({ repositories: ["app"], permissions: { contents: "write" } });
    const [call] = graphqlCalls();
    expect(call!.auth.kind).toBe("installation");
    const token = (call!.auth as { token: string }).token;
    expect(t.fx.sim.tokens.get(token)!.permissions).toEqual({ contents: "write" });
    expect(t.fx.sim.tokens.get(token)!.repositories).toEqual(["app"]);
  });

  it("accepts and ignores `user`: the commit is the App's", async () => {
    const { branch, head } = freshBranch();
    const { status } = await sign(signBody({ branch, expected_head_oid: head, user: "someone-else" }));
    expect(status).toBe(200);
    const created = t.fx.sim.git.commit(t.fx.sim.git.head(REPO, branch)!)!;
    expect(created.author.name).toMatch(/\[bot\]$/);
    expect(JSON.stringify(graphqlCalls()[0]!.body)).not.toContain("someone-else");
  });

  it("takes a body of about a mebibyte (the limit is 20 MiB, not the /token 64 KiB)", async () => {
    const { branch, head } = freshBranch();
    const big = b64("x".repeat(1024 * 1024));
    const { status } = await sign(signBody({ branch, expected_head_oid: head, additions: [{ path: "big.txt", contents: big }] }));
    expect(status).toBe(200);
    expect(t.fx.sim.git.files(REPO, branch)["big.txt"]).toHaveLength(1024 * 1024);
  });
});

describe("POST /sign platform failures", () => {
  it("answers 502 sign_failed when the branch moved (HTTP 200 + STALE_DATA), logs the platform's message, and does not retry", async () => {
    const { branch, head } = freshBranch();
    const moved = t.fx.sim.git.push(REPO, branch);
    const { status, body } = await sign(signBody({ branch, expected_head_oid: head }));
    expect(status).toBe(502);
    expect(body).toEqual({ error: "sign_failed" });
    const calls = graphqlCalls();
    expect(calls).toHaveLength(1);
    const answer = calls[0]!.response!;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ data: { createCommitOnBranch: null }, errors: [{ type: "STALE_DATA" }] });
    expect(logged(`Expected branch to point to \\"${head}\\" but it did not. Pull and try again.`)).toBe(true);
    expect(t.fx.sim.git.head(REPO, branch)).toBe(moved);
  });

  it("answers sign_failed when the branch does not exist", async () => {
    const { status, body } = await sign(signBody({ branch: "no-such-branch" }));
    expect(status).toBe(502);
    expect(body).toEqual({ error: "sign_failed" });
    expect(logged("NOT_FOUND")).toBe(true);
  });

  it("answers sign_failed on an HTTP error from the GraphQL endpoint, without retrying the mutation", async () => {
    const { branch, head } = freshBranch();
    t.fx.sim.faults.add({ method: "POST", path: "/graphql", respond: { status: 502, body: { message: "Server Error" } } });
    const { status, body } = await sign(signBody({ branch, expected_head_oid: head }));
    expect(status).toBe(502);
    expect(body).toEqual({ error: "sign_failed" });
    expect(graphqlCalls()).toHaveLength(1);
    expect(t.fx.sim.git.head(REPO, branch)).toBe(head);
  });

  it("answers installation_token_failed when the App is not installed on the repository", async () => {
    const { status, body } = await sign(signBody({ repo: "elsewhere/app" }));
    expect(status).toBe(502);
    expect(body).toEqual({ error: "installation_token_failed" });
    expect(graphqlCalls()).toHaveLength(0);
  });

  it("answers installation_token_failed when the installation lookup fails", async () => {
    t.fx.sim.faults.add({ method: "GET", path: /\/installation$/, respond: { status: 500, body: { message: "boom" } } });
    const { status, body } = await sign(signBody());
    expect(status).toBe(502);
    expect(body).toEqual({ error: "installation_token_failed" });
  });

  it("answers installation_token_failed when the mint is refused", async () => {
    t.fx.sim.faults.add({ method: "POST", path: /\/access_tokens$/, respond: { status: 403, body: { message: "Forbidden" } } });
    const { status, body } = await sign(signBody());
    expect(status).toBe(502);
    expect(body).toEqual({ error: "installation_token_failed" });
    expect(graphqlCalls()).toHaveLength(0);
  });

  it("answers installation_token_failed at once, with the wait as Retry-After, when the mint's points cannot come before the deadline", async () => {
    // GitHub's points budget set to 6 a minute on both sides: one cold /sign spends the App's 6
    // (lookup 1 + mint 5); the next /sign's mint (5 more) could only go out a minute later.
    const budgetBefore = t.fx.sim.limits.values.pointsPerMinute;
    t.broker.env.UPSTREAM_POINTS_PER_MINUTE = "6";
    t.fx.sim.limits.values.pointsPerMinute = 6;
    t.fx.sim.limits.forgetSpentPoints();
    const refusedBefore = t.fx.sim.limits.refused.points;
    try {
      const first = freshBranch();
      expect((await sign(signBody({ branch: first.branch, expected_head_oid: first.head }))).status).toBe(200);
      const second = freshBranch();
      const started = Date.now();
      const { status, body, headers } = await sign(signBody({ branch: second.branch, expected_head_oid: second.head }));
      expect(status).toBe(502);
      expect(body).toEqual({ error: "installation_token_failed" });
      const wait = Number(headers.get("retry-after"));
      expect(wait).toBeGreaterThanOrEqual(55);
      expect(wait).toBeLessThanOrEqual(61);
      expect(Date.now() - started).toBeLessThan(12_500); // not held to the 25 s deadline
      // Refused by the broker itself: one mint and one commit sent in all, none refused by the platform.
      expect(mints()).toHaveLength(1);
      expect(graphqlCalls()).toHaveLength(1);
      expect(t.fx.sim.limits.refused.points).toBe(refusedBefore);
      expect(t.fx.sim.git.head(REPO, second.branch)).toBe(second.head);
    } finally {
      t.fx.sim.limits.values.pointsPerMinute = budgetBefore;
      t.fx.sim.limits.forgetSpentPoints();
    }
  });

  it("answers installation_token_failed when the installation holds contents: read only", async () => {
    const readOnly = t.fx.sim.addInstallation({ appId: t.fx.app.id, account: "reader-org", permissions: { contents: "read", metadata: "read" }, repositories: ["app"] });
    t.fx.sim.git.createBranch("reader-org/app", "main");
    const { status, body } = await sign(signBody({ repo: "reader-org/app" }));
    expect(status).toBe(502);
    expect(body).toEqual({ error: "installation_token_failed" });
    expect(mints()[0]!.path).toContain(`/app/installations/${readOnly}/access_tokens`);
    expect(mints()[0]!.response!.status).toBe(422);
  });

  it("answers 503 app_unconfigured when the App is not configured", async () => {
    delete t.broker.env.HOST_APP_ID;
    const { status, body } = await sign(signBody());
    expect(status).toBe(503);
    expect(body).toEqual({ error: "app_unconfigured" });
    expect(t.fx.sim.requests).toHaveLength(0);
  });
});

describe("POST /sign authentication", () => {
  it("answers 503 sign_disabled when PROCESS_TRIGGER_SECRET is unset, before reading the body", async () => {
    delete t.broker.env.PROCESS_TRIGGER_SECRET;
    expect(await sign(signBody())).toMatchObject({ status: 503, body: { error: "sign_disabled" } });
    expect(await sign("{not json")).toMatchObject({ status: 503, body: { error: "sign_disabled" } });
    t.broker.env.PROCESS_TRIGGER_SECRET = "";
    expect(await sign(signBody())).toMatchObject({ status: 503, body: { error: "sign_disabled" } });
  });

  it.each([
    ["no header", {}],
    ["a wrong bearer of the same length", { authorization: `Bearer ${"x".repeat(SECRET.length)}` }],
    ["a wrong bearer of a different length", { authorization: "Bearer short" }],
    ["a longer bearer that starts with the secret", { authorization: `Bearer ${SECRET}-and-more` }],
    ["the secret's prefix", { authorization: `Bearer ${SECRET.slice(0, -1)}` }],
    ["another scheme", { authorization: `Basic ${SECRET}` }],
    ["an empty bearer", { authorization: "Bearer " }],
  ])("answers 401 unauthorized to %s", async (_label, headers) => {
    const { status, body } = await sign(signBody(), headers as Record<string, string>);
    expect(status).toBe(401);
    expect(body).toEqual({ error: "unauthorized" });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("checks the bearer before the body: a bad body with a wrong bearer is 401", async () => {
    expect(await sign("{not json", { authorization: "Bearer nope" })).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    expect(await sign({ repo: 1 }, { authorization: "Bearer nope" })).toMatchObject({ status: 401, body: { error: "unauthorized" } });
  });

  it("answers 405 with Allow: POST to other methods", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const response = await fetch(`${t.broker.url}/sign`, { method, headers: { authorization: `Bearer ${SECRET}` } });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
      expect(await response.json()).toEqual({ error: "method_not_allowed" });
    }
  });
});

describe("POST /sign body rules", () => {
  it("answers 413 payload_too_large over 20 MiB", async () => {
    const contents = "A".repeat(20 * 1024 * 1024 + 4);
    const { status, body } = await sign(signBody({ additions: [{ path: "huge", contents }] }));
    expect(status).toBe(413);
    expect(body).toEqual({ error: "payload_too_large" });
  });

  it.each([
    ["not JSON", "{not json"],
    ["an empty body", ""],
  ])("answers 400 invalid_json to %s", async (_label, raw) => {
    expect(await sign(raw)).toMatchObject({ status: 400, body: { error: "invalid_json" } });
  });

  it.each<[string, unknown]>([
    ["a JSON array", [signBody()]],
    ["a JSON string", "\"hello\""],
    ["repo not a string", signBody({ repo: 42 })],
    ["branch not a string", signBody({ branch: ["main"] })],
    ["message not an object", signBody({ message: "chore: release" })],
    ["message.headline not a string", signBody({ message: { headline: 7 } })],
    ["message.body not a string", signBody({ message: { headline: "x", body: {} } })],
    ["expected_head_oid not a SHA", signBody({ expected_head_oid: "HEAD" })],
    ["additions not an array", signBody({ additions: { path: "a", contents: "" } })],
    ["an addition that is not an object", signBody({ additions: ["VERSION"] })],
    ["an addition without a path", signBody({ additions: [{ contents: b64("x") }] })],
    ["an addition with an empty path", signBody({ additions: [{ path: "", contents: b64("x") }] })],
    ["an addition without contents", signBody({ additions: [{ path: "a" }] })],
    ["contents that are not base64", signBody({ additions: [{ path: "a", contents: "not base64!" }] })],
    ["contents with broken padding", signBody({ additions: [{ path: "a", contents: "abc" }] })],
    ["contents that are a number", signBody({ additions: [{ path: "a", contents: 12 }] })],
    ["deletions not an array", signBody({ deletions: "README.md" })],
    ["a deletion without a path", signBody({ deletions: [{}] })],
    ["the same path added twice", signBody({ additions: [{ path: "a", contents: "" }, { path: "a", contents: b64("y") }] })],
    ["the same path added and deleted", signBody({ deletions: [{ path: "VERSION" }] })],
  ])("answers 400 invalid_request to %s", async (_label, body) => {
    const { status, body: answer } = await sign(body);
    expect(status).toBe(400);
    expect(answer).toEqual({ error: "invalid_request" });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it.each<[string, Record<string, unknown>]>([
    ["repo", { repo: undefined }],
    ["repo (empty)", { repo: "" }],
    ["branch", { branch: undefined }],
    ["branch (null)", { branch: null }],
    ["expected_head_oid", { expected_head_oid: undefined }],
    ["message", { message: undefined }],
    ["message.headline", { message: { body: "only a body" } }],
    ["message.headline (empty)", { message: { headline: "" } }],
  ])("answers 400 missing_required_fields without %s", async (_label, overrides) => {
    const body = JSON.parse(JSON.stringify(signBody(overrides)));
    expect(await sign(body)).toMatchObject({ status: 400, body: { error: "missing_required_fields" } });
  });

  it.each<[string, Record<string, unknown>]>([
    ["neither list", { additions: undefined }],
    ["two empty lists", { additions: [], deletions: [] }],
    ["null lists", { additions: null, deletions: null }],
  ])("answers 400 no_file_changes with %s", async (_label, overrides) => {
    const body = JSON.parse(JSON.stringify(signBody(overrides)));
    expect(await sign(body)).toMatchObject({ status: 400, body: { error: "no_file_changes" } });
  });

  it.each(["app", "octo-org/app/extra", "/app", "octo-org/", "octo org/app", "../app", "octo-org/.."])("answers 400 invalid_repo to %p", async (repo) => {
    expect(await sign(signBody({ repo }))).toMatchObject({ status: 400, body: { error: "invalid_repo" } });
  });

  it("cannot be polluted through __proto__", async () => {
    const raw = `{"__proto__": {"repo": "octo-org/app"}, "branch": "main", "expected_head_oid": "${"a".repeat(40)}", "message": {"headline": "x"}, "additions": [{"path": "a", "contents": ""}]}`;
    expect(await sign(raw)).toMatchObject({ status: 400, body: { error: "missing_required_fields" } });
    expect(({} as Record<string, unknown>).repo).toBeUndefined();
  });
});

describe("the simulator's createCommitOnBranch", () => {
  async function mutate(token: string, input: Record<string, unknown>) {
    const response = await fetch(t.fx.sim.graphqlUrl, {
      method: "POST",
      headers: { authorization: `token ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid } ref { name target { oid } } } }", variables: { input } }),
    });
    return { status: response.status, body: (await response.json()) as { data?: unknown; errors?: Array<{ type?: string; message: string }> } };
  }

  it("answers FORBIDDEN without contents: write, like GitHub", async () => {
    const { branch, head } = freshBranch();
    const token = t.fx.sim.issueToken(t.fx.installationId, { permissions: { contents: "read" }, repositories: ["app"] });
    secrets.push(token);
    const { status, body } = await mutate(token, {
      branch: { repositoryNameWithOwner: REPO, branchName: branch },
      expectedHeadOid: head,
      message: { headline: "x" },
      fileChanges: { additions: [{ path: "a", contents: "" }] },
    });
    expect(status).toBe(200);
    expect(body.errors).toEqual([expect.objectContaining({ type: "FORBIDDEN", message: "Resource not accessible by integration" })]);
    expect(t.fx.sim.git.head(REPO, branch)).toBe(head);
  });

  it("serves Repository.ref and defaultBranchRef", async () => {
    const { branch, head } = freshBranch();
    const token = t.fx.sim.issueToken(t.fx.installationId, { repositories: ["app"] });
    secrets.push(token);
    const response = await fetch(t.fx.sim.graphqlUrl, {
      method: "POST",
      headers: { authorization: `token ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ query: `{ repository(owner: "octo-org", name: "app") { ref(qualifiedName: "refs/heads/${branch}") { name target { oid } } defaultBranchRef { name } } }` }),
    });
    const body = (await response.json()) as { data: { repository: { ref: { name: string; target: { oid: string } }; defaultBranchRef: unknown } } };
    expect(body.data.repository.ref).toEqual({ name: branch, target: { oid: head } });
  });
});

describe("POST /sign on an enterprise-layout platform", () => {
  it("sends the mutation to /api/graphql when the API base ends in /api/v3", async () => {
    const { createSimulator } = await import("../simulator/index.js");
    const ent = await createSimulator({ flavor: "enterprise" });
    try {
      const app = ent.createApp();
      ent.addInstallation({ appId: app.id, account: "octo-org", permissions: { contents: "write" }, repositories: ["app"] });
      secrets.push(app.privateKeyPem);
      const head = ent.git.createBranch(REPO, "main");
      t.broker.env.HOST_APP_ID = String(app.id);
      t.broker.env.HOST_APP_PRIVATE_KEY = app.privateKeyPem;
      t.broker.env.HOST_API_BASE = ent.apiBase;
      const { status, body } = await sign(signBody({ expected_head_oid: head }));
      expect(status).toBe(200);
      expect((body.commit as { oid: string }).oid).toBe(ent.git.head(REPO, "main"));
      expect(ent.requests.filter((r) => r.method === "POST").map((r) => r.path)).toEqual([
        expect.stringMatching(/^\/api\/v3\/app\/installations\/\d+\/access_tokens$/),
        "/api/graphql",
      ]);
      for (const issued of ent.tokens.keys()) secrets.push(issued);
    } finally {
      await ent.close();
    }
  });
});

// `git check-ref-format --branch`, run outside any repository (so `@{-1}` means nothing).
const outsideRepo = mkdtempSync(join(tmpdir(), "tokensmith-refs-"));
function gitAcceptsBranch(name: string): boolean {
  const run = spawnSync("git", ["check-ref-format", "--branch", name], { cwd: outsideRepo, env: { PATH: process.env.PATH, GIT_CEILING_DIRECTORIES: dirname(outsideRepo), HOME: outsideRepo }, encoding: "utf8" });
  if (run.error) throw run.error;
  return run.status === 0;
}

const BRANCHES: Array<[string, boolean]> = [
  ["main", true], ["release/1.2.3", true], ["feature/x-y_z", true], ["a]", true], ["a{", true], ["a@b", true], ["x@", true],
  ["@@", true], ["@/x", true], ["x/HEAD", true], ["HEAD/x", true], ["FETCH_HEAD", true], ["refs/heads/x", true], ["a.lock.b", true],
  ["a-", true], ["é/ünïcode", true], ["v1.2", true],
  ["-x", false], ["-", false], ["HEAD", false], ["a@{b", false], ["@{-1}", false], ["a..b", false], ["a/..b", false], ["a..lock", false],
  [".a", false], ["a/.b", false], [".lock", false], ["a.lock", false], ["a.lock/b", false], ["a/", false], ["/a", false], ["a//b", false],
  ["a.", false], ["a/b.", false], ["a b", false], ["a\tb", false], ["a\u007fb", false], ["a\\b", false], ["a~1", false], ["a^", false],
  ["a:b", false], ["a?", false], ["a*", false], ["a[", false],
];

describe("branchNameProblem (git check-ref-format --branch)", () => {
  it.each(BRANCHES)("%j valid: %j — and git agrees", (name, valid) => {
    expect(branchNameProblem(name) === null).toBe(valid);
    expect(gitAcceptsBranch(name)).toBe(valid);
  });

  it.each(["", "a\u0000b", "a\ud800b"])("%j is refused (not expressible as a git argument)", (name) => {
    expect(branchNameProblem(name)).not.toBeNull();
  });
});

describe("commitPathProblem", () => {
  it.each([
    ["VERSION"], ["a/b/c.txt"], [".github/workflows/ci.yml"], [".gitignore"], [".gitattributes"], ["a..b"], ["docs/.git-blame-ignore-revs"],
    ["dir.git/x"], ["git/x"], ["é/ünïcode.md"], ["a b/c d"], ["...x"],
  ])("%j is a path a commit may carry", (path) => expect(commitPathProblem(path)).toBeNull());

  it.each([
    ["/etc/passwd", "is absolute"], ["C:/x", "is absolute"], ["c:x", "is absolute"],
    ["a\\b", "contains a backslash"], ["\\a", "contains a backslash"],
    ["a\u0000b", "contains a control character"], ["a\nb", "contains a control character"], ["a\u007f", "contains a control character"],
    ["a\ud800", "is not well-formed text"],
    ["a//b", "has an empty segment"], ["a/", "has an empty segment"],
    ["..", "has a . or .. segment"], ["../x", "has a . or .. segment"], ["a/../../x", "has a . or .. segment"], ["./a", "has a . or .. segment"], ["a/./b", "has a . or .. segment"],
    [".git", "has a .git segment"], [".git/config", "has a .git segment"], [".GIT/hooks/pre-commit", "has a .git segment"], [".Git/x", "has a .git segment"],
    ["a/.git/config", "has a .git segment"], [".git./config", "has a .git segment"], [".git /config", "has a .git segment"],
    ["GIT~1/config", "has a .git segment"], [".g\u200cit/config", "has a .git segment"], ["\ufeff.git/config", "has a .git segment"],
  ])("%j %s", (path, problem) => expect(commitPathProblem(path)).toBe(problem));
});

describe("POST /sign path and branch rules over HTTP", () => {
  it.each([["/abs"], ["a/../../etc/passwd"], [".git/hooks/post-checkout"], [".GIT/config"], ["a//b"], ["dir/"], ["a\\b"], ["a\u0000b"]])(
    "answers 400 invalid_request to the addition path %j, before any platform call",
    async (path) => {
      const { branch, head } = freshBranch();
      const res = await sign(signBody({ branch, expected_head_oid: head, additions: [{ path, contents: b64("x") }] }));
      expect(res).toMatchObject({ status: 400, body: { error: "invalid_request" } });
      expect(Object.keys(res.body)).toEqual(["error"]);
      expect(t.fx.sim.requests).toHaveLength(0);
      expect(t.fx.sim.git.head(REPO, branch)).toBe(head);
    },
  );

  it("refuses a deletion path the same way", async () => {
    const res = await sign(signBody({ additions: [], deletions: [{ path: ".git/config" }] }));
    expect(res).toMatchObject({ status: 400, body: { error: "invalid_request" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it.each([["-x"], ["HEAD"], ["a..b"], ["a.lock"], ["feature/"], ["a b"], ["@{-1}"], ["x~1"]])("answers 400 invalid_request to the branch %j, before any platform call", async (branch) => {
    const res = await sign(signBody({ branch }));
    expect(res).toMatchObject({ status: 400, body: { error: "invalid_request" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("still commits to paths that merely look alike (.github/, .gitignore)", async () => {
    const { branch, head } = freshBranch();
    const res = await sign(signBody({ branch, expected_head_oid: head, additions: [{ path: ".github/workflows/ci.yml", contents: b64("on: push\n") }, { path: ".gitignore", contents: b64("build/\n") }] }));
    expect(res.status).toBe(200);
    expect(t.fx.sim.git.files(REPO, branch)[".gitignore"]).toBe("build/\n");
  });
});

describe("SIGN_ALLOWED_REPOSITORIES", () => {
  it("answers 403 repo_not_allowed outside the list, before any platform call", async () => {
    t.broker.env.SIGN_ALLOWED_REPOSITORIES = " octo-org/other , someone/else ";
    const { branch, head } = freshBranch();
    const res = await sign(signBody({ branch, expected_head_oid: head }));
    expect(res).toMatchObject({ status: 403, body: { error: "repo_not_allowed" } });
    expect(t.fx.sim.requests).toHaveLength(0);
    expect(t.fx.sim.git.head(REPO, branch)).toBe(head);
  });

  it("nothing is a pattern: entries match exactly", async () => {
    t.broker.env.SIGN_ALLOWED_REPOSITORIES = "octo-org/*, octo-org/ap*, *";
    expect(await sign(signBody())).toMatchObject({ status: 403, body: { error: "repo_not_allowed" } });
    t.broker.env.SIGN_ALLOWED_REPOSITORIES = "Octo-Org/App";
    expect(await sign(signBody())).toMatchObject({ status: 403, body: { error: "repo_not_allowed" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("commits to a listed repository", async () => {
    t.broker.env.SIGN_ALLOWED_REPOSITORIES = "someone/else, octo-org/app";
    const { branch, head } = freshBranch();
    const res = await sign(signBody({ branch, expected_head_oid: head }));
    expect(res.status).toBe(200);
    expect(t.fx.sim.git.head(REPO, branch)).not.toBe(head);
  });

  it("unset or blank: every repository the App is installed on, as before", async () => {
    t.broker.env.SIGN_ALLOWED_REPOSITORIES = "  ";
    const { branch, head } = freshBranch();
    expect((await sign(signBody({ branch, expected_head_oid: head }))).status).toBe(200);
  });

  it("does not limit /token (ALLOWED_REPOSITORIES does)", async () => {
    t.broker.env.SIGN_ALLOWED_REPOSITORIES = "someone/else";
    const oidcToken = await t.fx.sim.oidc.sign({});
    secrets.push(oidcToken);
    const res = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
    if (typeof res.body?.token === "string") secrets.push(res.body.token);
    expect(res.status).toBe(200);
  });
});
