// POST /token with `repositories` (docs/policies.md#other-repositories), over
// HTTP through the simulator: one installation token for the caller's repository and others of
// its owner, each consenting in its own .github/tokensmith.yml with a rule that has a `repository`
// condition; the token's permissions within every target's grant; a denial that names the target
// and nothing of its rules; the owner policy as a ceiling on each target; the field's validation.
import { describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { blobSha } from "../simulator/rest-contents-routes.js";

let clockOffsetMs = 0;
const t = brokerPerTest({
  broker: { now: () => Date.now() + clockOffsetMs },
  env: { TOKEN_POLICY: "optional", TOKEN_PERMISSIONS: "contents=write,pull_requests=write,issues=read" },
  setup: (fx) => {
    for (const repository of ["octo-org/app", "octo-org/docs", "octo-org/website", "octo-org/private", "octo-org/.github", "octo-org/outside"]) {
      fx.sim.git.createBranch(repository, "main", { files: { "README.md": `# ${repository}\n` } });
    }
    // `outside` exists but the App is not installed on it.
    fx.sim.installation(fx.installationId).repositories = ["app", "docs", "website", "private", ".github"];
  },
});

/** docs lends contents write and issues read to release.yml of octo-org/app, on a tag push only. */
const DOCS_CONSENT = `rules:
  - name: app-release
    if:
      repository: octo-org/app
      event: push
      ref: refs/tags/v*
      workflow: .github/workflows/release.yml
    permissions: {contents: write, issues: read}
  - name: own-ci
    if: {event: push}
    permissions: {contents: write, pull_requests: write, issues: read}
`;
/** website lends contents read only, to any repository of octo-org whose job pushes a tag. */
const WEBSITE_CONSENT = `rules:
  - name: org-releases
    if: {repository: "octo-org/*", event: push, ref: "refs/tags/**"}
    permissions: {contents: read}
`;
const TAG_JOB = { ref: "refs/tags/v1.2.0", workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/tags/v1.2.0" };

const setPolicy = (repository: string, text: string | null, path = ".github/tokensmith.yml") => t.fx.sim.git.setFile(repository, path, text);
const clearPolicies = () => {
  for (const repository of ["octo-org/app", "octo-org/docs", "octo-org/website", "octo-org/private"]) setPolicy(repository, null);
  setPolicy("octo-org/.github", null, ".github/tokensmith-org.yml");
};

async function mint(claims: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const oidcToken = await t.fx.sim.oidc.sign(claims);
  return postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app", ...extra });
}
const jobTokenMints = () =>
  // The broker's own reader token is minted over the whole installation (no repository_ids); the job's by ids.
  t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens") && (r.body as { repository_ids?: unknown }).repository_ids !== undefined);
const audit = (name: string) => t.broker.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.audit === name);

/** What the token reaches: a file of each repository read with it, through the simulator's contents API. */
async function reaches(token: unknown, repository: string): Promise<number> {
  const response = await fetch(`${t.fx.sim.apiBase}/repos/${repository}/contents/README.md`, { headers: { authorization: `Bearer ${String(token)}`, accept: "application/vnd.github+json" } });
  await response.arrayBuffer();
  return response.status;
}

describe("repositories: one token for the caller's repository and others that consent", () => {
  it("consent granted: one installation token scoped to exactly those repositories (minted by ids), the permissions within every target's grant", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    setPolicy("octo-org/website", WEBSITE_CONSENT);
    const answer = await mint(TAG_JOB, { repositories: ["docs", "octo-org/website"] });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ repository: "octo-org/app", repositories: ["octo-org/app", "octo-org/docs", "octo-org/website"] });
    // TOKEN_PERMISSIONS ∩ installation ∩ docs (contents write, issues read) ∩ website (contents read).
    expect(answer.body.permissions).toEqual({ contents: "read" });
    const issued = t.fx.sim.tokens.get(String(answer.body.token))!;
    expect([...(issued.repositories as string[])].sort()).toEqual(["app", "docs", "website"]);
    const [mintRequest] = jobTokenMints();
    const ids = ["app", "docs", "website"].map((name) => t.fx.sim.repository("octo-org", name).id);
    expect((mintRequest!.body as { repository_ids: number[] }).repository_ids).toEqual(ids);
    expect(await reaches(answer.body.token, "octo-org/docs")).toBe(200);
    expect(await reaches(answer.body.token, "octo-org/website")).toBe(200);
    expect(await reaches(answer.body.token, "octo-org/private")).toBe(404);
    // The audit line names each target, its consenting rule and its policy's blob SHA.
    expect(audit("token_minted")[0]!.repositories).toEqual([
      { repository: "octo-org/docs", repository_id: ids[1], policy_rule: "app-release", policy_sha: blobSha(Buffer.from(DOCS_CONSENT)) },
      { repository: "octo-org/website", repository_id: ids[2], policy_rule: "org-releases", policy_sha: blobSha(Buffer.from(WEBSITE_CONSENT)) },
    ]);
  });

  it("steady state: a second request reads nothing again (the target's id and policy come from the caches the caller's policy uses): one platform request, the mint", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    expect((await mint(TAG_JOB, { repositories: ["docs"] })).status).toBe(200);
    t.fx.sim.clearRequests();
    expect((await mint(TAG_JOB, { repositories: ["docs"] })).status).toBe(200);
    expect(t.fx.sim.requests.filter((r) => !r.path.startsWith("/oidc")).map((r) => `${r.method} ${r.path}`)).toEqual([`POST /app/installations/${t.fx.installationId}/access_tokens`]);
  });

  it("one target alone: the token gets that target's grant ∩ TOKEN_PERMISSIONS ∩ installation; a request beyond it is 403 permissions_not_granted naming the target", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    const answer = await mint(TAG_JOB, { repositories: ["docs"] });
    expect(answer.status).toBe(200);
    expect(answer.body.permissions).toEqual({ contents: "write", issues: "read" });
    const beyond = await mint(TAG_JOB, { repositories: ["docs"], permissions: { pull_requests: "write" } });
    expect(beyond.body).toEqual({ error: "permissions_not_granted", detail: "pull_requests: write withheld by repository octo-org/docs (not granted)" });
  });

  it("listing the caller's own repository is allowed and changes nothing; without other repositories the answer has no `repositories`", async () => {
    clearPolicies();
    const answer = await mint({}, { repositories: ["app"] });
    expect(answer.status).toBe(200);
    expect(answer.body).not.toHaveProperty("repositories");
    expect(t.fx.sim.tokens.get(String(answer.body.token))!.repositories).toEqual(["app"]);
  });
});

describe("a target that does not consent → 403 policy_denied naming it, and nothing of its rules; nothing minted for the job", () => {
  const denied = (name: string) => ({
    error: "policy_denied",
    detail: `repository octo-org/${name} does not consent to a token for octo-org/app from this job (a rule of its own .github/tokensmith.yml with a repository condition must hold)`,
  });

  it.each([
    ["it has no policy (even with TOKEN_POLICY=optional)", null, TAG_JOB],
    ["its policy has no rule with a repository condition", "rules:\n  - name: own-ci\n    if: {event: push}\n    permissions: {contents: write}\n", TAG_JOB],
    ["its repository glob does not match the caller", "rules:\n  - name: lib-only\n    if: {repository: octo-org/lib, event: push}\n    permissions: {contents: read}\n", TAG_JOB],
    ["another condition of the consenting rule fails (a branch push, not a tag)", DOCS_CONSENT, { ref: "refs/heads/main" }],
    ["its policy does not validate (the caller is not shown why)", "rules:\n  - name: x\n    if: {branch: main}\n    permissions: {contents: read}\n", TAG_JOB],
  ])("%s", async (_what, policy, claims) => {
    clearPolicies();
    setPolicy("octo-org/docs", policy);
    const answer = await mint(claims, { repositories: ["docs"] });
    expect(answer.status).toBe(403);
    expect(answer.body).toEqual(denied("docs"));
    expect(jobTokenMints()).toEqual([]);
    expect(audit("token_denied")).toEqual([expect.objectContaining({ code: "policy_denied", target: "octo-org/docs", consent: expect.any(String) })]);
  });

  it("a repository the App is not installed on, and one that does not exist, are denied alike (existence is not revealed)", async () => {
    clearPolicies();
    const outside = await mint(TAG_JOB, { repositories: ["outside"] });
    const missing = await mint(TAG_JOB, { repositories: ["no-such-repo"] });
    expect(outside.body).toEqual(denied("outside"));
    expect(missing.body).toEqual(denied("no-such-repo"));
    // Named as asked, not as the platform spells it: `PRIVATE` exists (as `private`), `NO-SUCH` does not.
    expect((await mint(TAG_JOB, { repositories: ["PRIVATE"] })).body).toEqual(denied("PRIVATE"));
    expect((await mint(TAG_JOB, { repositories: ["NO-SUCH"] })).body).toEqual(denied("NO-SUCH"));
    expect(jobTokenMints()).toEqual([]);
  });

  it("one consenting target does not carry another that does not", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    const answer = await mint(TAG_JOB, { repositories: ["docs", "private"] });
    expect(answer.body).toEqual(denied("private"));
  });

  it("TOKEN_POLICY=off: repositories is refused, since consent needs policies", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    t.broker.env.TOKEN_POLICY = "off";
    const answer = await mint(TAG_JOB, { repositories: ["docs"] });
    expect(answer.body).toEqual({ error: "policy_denied", detail: "repositories needs trust policies (a repository consents in its own .github/tokensmith.yml), and this broker reads none (TOKEN_POLICY=off)" });
    expect(jobTokenMints()).toEqual([]);
  });

  it("ALLOWED_REPOSITORIES holds for every target: one outside it → 403 repo_not_allowed naming it, before any platform call", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    t.broker.env.ALLOWED_REPOSITORIES = "octo-org/app";
    const answer = await mint(TAG_JOB, { repositories: ["docs"] });
    expect(answer.body).toEqual({ error: "repo_not_allowed", detail: "repository octo-org/docs (of repositories) is outside ALLOWED_REPOSITORIES" });
    expect(t.fx.sim.requests.filter((r) => !r.path.startsWith("/oidc"))).toEqual([]);
    t.broker.env.ALLOWED_REPOSITORIES = "octo-org/app,octo-org/docs";
    expect((await mint(TAG_JOB, { repositories: ["docs"] })).status).toBe(200);
  });
});

describe("a target known by id", () => {
  it("deleted and re-created under the same name: the old one's consent (still cached) does not carry over; the mint by the old id is refused and the new one, asked again, has not consented", async () => {
    clearPolicies();
    setPolicy("octo-org/website", WEBSITE_CONSENT);
    expect((await mint(TAG_JOB, { repositories: ["website"] })).status).toBe(200);
    const oldId = t.fx.sim.repository("octo-org", "website").id;
    t.fx.sim.deleteRepository("octo-org", "website");
    const newId = t.fx.sim.repository("octo-org", "website").id;
    t.fx.sim.installation(t.fx.installationId).repositories = ["app", "docs", "website", "private", ".github"];
    setPolicy("octo-org/website", null); // the new repository's files: no policy
    expect(newId).not.toBe(oldId);
    t.fx.sim.clearRequests();
    const answer = await mint(TAG_JOB, { repositories: ["website"] });
    expect(answer.body).toMatchObject({ error: "policy_denied", detail: expect.stringContaining("repository octo-org/website does not consent") });
    // The mint by the old id was refused (422), and nothing was handed out.
    expect(jobTokenMints().map((r) => (r.body as { repository_ids: number[] }).repository_ids)).toEqual([[t.fx.sim.repository("octo-org", "app").id, oldId]]);
    expect(t.fx.sim.requests.filter((r) => r.path === "/repos/octo-org/website").length).toBe(1);
  });
});

describe("the owner policy on a target", () => {
  it("is a ceiling: the token gets no more than the owner rule that holds for the target", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    setPolicy("octo-org/.github", "rules:\n  - name: docs-read\n    repositories: [docs]\n    permissions: {contents: read}\n  - name: rest\n    permissions: {contents: write, pull_requests: write, issues: read}\n", ".github/tokensmith-org.yml");
    const answer = await mint(TAG_JOB, { repositories: ["docs"] });
    expect(answer.status).toBe(200);
    expect(answer.body.permissions).toEqual({ contents: "read" });
    expect(audit("token_minted")[0]!.repositories).toEqual([expect.objectContaining({ repository: "octo-org/docs", policy_rule: "app-release", owner_policy_rule: "docs-read" })]);
  });

  it("no owner rule holding for the target denies it", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    setPolicy("octo-org/.github", "rules:\n  - name: app-only\n    repositories: [app]\n    permissions: {contents: write}\n", ".github/tokensmith-org.yml");
    const answer = await mint(TAG_JOB, { repositories: ["docs"] });
    expect(answer.body).toMatchObject({ error: "policy_denied", detail: expect.stringContaining("repository octo-org/docs does not consent") });
  });

  it("repository_policies: ignore: the target's own file is disregarded; an owner rule with a repository condition covering the target consents", async () => {
    clearPolicies();
    setPolicy("octo-org/docs", DOCS_CONSENT);
    const central = (consent: string) =>
      `repository_policies: ignore\nrules:\n${consent}  - name: everyone\n    permissions: {contents: write, pull_requests: write, issues: read}\n`;
    setPolicy("octo-org/.github", central(""), ".github/tokensmith-org.yml");
    clockOffsetMs = 0;
    expect((await mint(TAG_JOB, { repositories: ["docs"] })).body).toMatchObject({ error: "policy_denied" });
    clockOffsetMs = 61_000; // past POLICY_CACHE_SECONDS: the owner policy is read again
    setPolicy("octo-org/.github", central("  - name: app-to-docs\n    repositories: [docs]\n    if: {repository: octo-org/app, event: push}\n    permissions: {issues: read}\n"), ".github/tokensmith-org.yml");
    const answer = await mint(TAG_JOB, { repositories: ["docs"] });
    expect(answer.body).toMatchObject({ repositories: ["octo-org/app", "octo-org/docs"] });
    expect(answer.body.permissions).toEqual({ issues: "read" });
    clockOffsetMs = 0;
  });
});

describe("the field is validated → 400 invalid_repositories with a detail naming the entry", () => {
  it.each([
    ["not an array", "docs", "repositories is not a JSON array of repository names"],
    ["empty", [], "repositories names no repository"],
    ["a non-string entry", ["docs", 7], "repositories has an entry that is not a string"],
    ["another owner", ["other-org/docs"], 'repository "other-org/docs" is not of the owner octo-org (a token covers repositories of one owner)'],
    ["not a name", ["octo-org/a/b"], 'repository "octo-org/a/b" is not a repository name (letters, digits, ., - and _)'],
    ["a name with a space", ["my docs"], 'repository "my docs" is not a repository name (letters, digits, ., - and _)'],
    ["a dot name", [".."], 'repository ".." is not a repository name (letters, digits, ., - and _)'],
    ["named twice (case-insensitive)", ["docs", "octo-org/Docs"], 'repository "Docs" is named twice'],
    ["over 20", Array.from({ length: 21 }, (_, index) => `r${index}`), "repositories names more than 20 repositories"],
  ])("%s", async (_what, repositories, detail) => {
    const answer = await mint({}, { repositories });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: "invalid_repositories", detail });
    expect(t.fx.sim.requests.filter((r) => !r.path.startsWith("/oidc"))).toEqual([]);
  });
});
