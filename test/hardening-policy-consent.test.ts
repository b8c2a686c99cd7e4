// Issue 36 items 2, 3, 5, 8 and issue 37 item 5, over HTTP against the broker and the simulator
// (docs/security.md, "Threats and defences"):
// - under `repository_policies: ignore`, an owner rule lends a repository only when its
//   `repositories` names it (no list lends nothing), and the owner's `.github` only when named
//   literally;
// - under `ignore`, no repository file is fetched (the caller's or a target's): an invalid one does
//   not fail the job;
// - the caller's own rule is decided before any target is looked up: a denied job naming made-up
//   repositories spends no platform request, and the owner's other jobs keep their lookups; an
//   allowed job's lookups that find nothing come out of its own repository's share;
// - a denial by the owner policy names its rules only, never their conditions or lists.
import { describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const REPOSITORIES = ["app", "other", "secrets-store", "docs", ".github"];
const t = brokerPerTest({
  env: { TOKEN_POLICY: "optional", TOKEN_PERMISSIONS: "contents=write,pull_requests=write" },
  setup: (fx) => {
    for (const name of REPOSITORIES) fx.sim.git.createBranch(`octo-org/${name}`, "main", { files: { "README.md": `# ${name}\n` } });
    fx.sim.installation(fx.installationId).repositories = [...REPOSITORIES];
  },
});

const TAG_JOB = { ref: "refs/tags/v1.2.0", workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/tags/v1.2.0" };
const BRANCH_JOB = { ref: "refs/heads/feat-x", workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/heads/feat-x" };
const INVALID = "rules:\n  - name: x\n    if: {branch: main}\n    permissions: {contents: write}\n";

/** Sets every policy file: the owner's, and each repository's (absent unless given). */
function policies(owner: string | null, repositories: Record<string, string> = {}) {
  t.fx.sim.git.setFile("octo-org/.github", ".github/tokensmith-org.yml", owner);
  for (const name of REPOSITORIES) t.fx.sim.git.setFile(`octo-org/${name}`, ".github/tokensmith.yml", repositories[name] ?? null);
}

async function mint(claims: Record<string, unknown>, extra: Record<string, unknown> = {}, repo = "app") {
  const oidcToken = await t.fx.sim.oidc.sign({ repository: `octo-org/${repo}`, ...claims });
  return postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo, ...extra });
}
const denied = (name: string) => ({
  error: "policy_denied",
  detail: `repository octo-org/${name} does not consent to a token for octo-org/app from this job (a rule of its own .github/tokensmith.yml with a repository condition must hold)`,
});
const platformCalls = () => t.fx.sim.requests.filter((r) => !r.path.startsWith("/oidc"));
const jobTokenMints = () => t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens") && (r.body as { repository_ids?: unknown }).repository_ids !== undefined);
const lookupsOfTargets = () => t.fx.sim.requests.filter((r) => r.method === "GET" && /^\/repos\/octo-org\/[^/]+$/.test(r.path));
const audit = (name: string) => t.broker.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.audit === name);

/** Whether the token reads the repository's README through the simulator's contents API. */
async function reaches(token: unknown, name: string): Promise<number> {
  const response = await fetch(`${t.fx.sim.apiBase}/repos/octo-org/${name}/contents/README.md`, { headers: { authorization: `Bearer ${String(token)}`, accept: "application/vnd.github+json" } });
  await response.arrayBuffer();
  return response.status;
}

/** An owner policy that ignores repository files; `lend` is the rule (for octo-org/app's tag jobs) whose `repositories` is under test. */
const central = (lendRepositories: string | null) =>
  `repository_policies: ignore
rules:
  - name: app-release
${lendRepositories === null ? "" : `    repositories: ${lendRepositories}\n`}    if: {repository: octo-org/app, event: push, ref: "refs/tags/v*"}
    permissions: {contents: write}
  - name: app-own
    repositories: [app]
    if: {event: push, ref: "refs/tags/v*"}
    permissions: {contents: write}
`;

describe("repository_policies: ignore — an owner rule lends only the repositories its `repositories` names", () => {
  it("a rule with a repository condition and no `repositories` (a ceiling for one repository) lends nothing: the tag job asking for [other, .github, secrets-store] → 403 policy_denied, nothing minted, nothing looked up", async () => {
    policies(central(null));
    const answer = await mint(TAG_JOB, { repositories: ["other", ".github", "secrets-store"] });
    expect(answer.status).toBe(403);
    expect(answer.body).toEqual(denied("other"));
    expect(jobTokenMints()).toEqual([]);
    expect(lookupsOfTargets()).toEqual([]);
    // The caller alone still gets its owner rule's token.
    const alone = await mint(TAG_JOB);
    expect(alone.status).toBe(200);
    expect(alone.body.permissions).toEqual({ contents: "write" });
  });

  it('`repositories: [other]`: other is lent, and only other', async () => {
    policies(central("[other]"));
    const lent = await mint(TAG_JOB, { repositories: ["other"] });
    expect(lent.status).toBe(200);
    expect(lent.body).toMatchObject({ repositories: ["octo-org/app", "octo-org/other"], permissions: { contents: "write" } });
    expect(await reaches(lent.body.token, "other")).toBe(200);
    expect(await reaches(lent.body.token, "secrets-store")).toBe(404);
    expect((await mint(TAG_JOB, { repositories: ["other", ".github", "secrets-store"] })).body).toEqual(denied(".github"));
    expect((await mint(TAG_JOB, { repositories: ["secrets-store"] })).body).toEqual(denied("secrets-store"));
  });

  it("a glob (`*`, `.git*`) is an explicit choice and lends what it matches, but never the owner's .github", async () => {
    policies(central('["*"]'));
    const lent = await mint(TAG_JOB, { repositories: ["other", "secrets-store"] });
    expect(lent.status).toBe(200);
    expect(lent.body.repositories).toEqual(["octo-org/app", "octo-org/other", "octo-org/secrets-store"]);
    expect((await mint(TAG_JOB, { repositories: ["other", ".github"] })).body).toEqual(denied(".github"));
  });

  it("`.git*` matches .github, and still does not lend it", async () => {
    policies(central('[".git*"]'));
    expect((await mint(TAG_JOB, { repositories: [".github"] })).body).toEqual(denied(".github"));
    expect(jobTokenMints()).toEqual([]);
  });

  it(".github named literally (any case) is lent", async () => {
    policies(central('["*", .GitHub]'));
    const lent = await mint(TAG_JOB, { repositories: ["other", ".github"] });
    expect(lent.status).toBe(200);
    expect(lent.body.repositories).toEqual(["octo-org/app", "octo-org/other", "octo-org/.github"]);
    expect(await reaches(lent.body.token, ".github")).toBe(200);
  });
});

describe("repository_policies: ignore — repository files are never fetched", () => {
  it("the caller's invalid file: no request for it (or its directory), and the job gets its owner rule's token", async () => {
    policies(central("[other]"), { app: INVALID, other: INVALID });
    const answer = await mint(TAG_JOB, { repositories: ["other"] });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ repositories: ["octo-org/app", "octo-org/other"], permissions: { contents: "write" } });
    expect(audit("token_minted")).toEqual([expect.objectContaining({ owner_policy_rule: "app-own", repositories: [expect.objectContaining({ repository: "octo-org/other", owner_policy_rule: "app-release" })] })]);
    const contents = t.fx.sim.requests.filter((r) => r.path.includes("/contents")).map((r) => r.path);
    expect(contents.length).toBeGreaterThan(0); // the owner policy was read
    expect(contents.filter((path) => !path.startsWith("/repos/octo-org/.github/"))).toEqual([]);
  });

  it("without ignore the same files are read: the caller's invalid one is 403 policy_invalid", async () => {
    policies(central("[other]").replace("repository_policies: ignore\n", ""), { app: INVALID });
    const answer = await mint(TAG_JOB);
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ error: "policy_invalid" });
    expect(t.fx.sim.requests.some((r) => r.path === "/repos/octo-org/app/contents/.github/tokensmith.yml")).toBe(true);
  });
});

describe("the caller is decided first: a denied job costs no lookup of its targets", () => {
  const APP_POLICY = "rules:\n  - name: release\n    if: {event: push, ref: refs/tags/v*}\n    permissions: {contents: write}\n";
  const madeUp = (request: number) => Array.from({ length: 20 }, (_, i) => `made-up-${request}-${i}`);

  it("8 denied requests naming 20 made-up repositories spend no platform request beyond a denied request without them; the owner's other job then gets its token", async () => {
    policies(null, { app: APP_POLICY });
    const plain = await mint(BRANCH_JOB);
    expect(plain.body).toMatchObject({ error: "policy_denied", detail: expect.stringContaining("rule release: ref is refs/heads/feat-x") });
    const spentByPlain = platformCalls().length;
    t.fx.sim.clearRequests();
    // Repeated, the denied request without repositories costs nothing (everything it read is cached).
    expect((await mint(BRANCH_JOB)).status).toBe(403);
    expect(platformCalls()).toEqual([]);
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => mint(BRANCH_JOB, { repositories: madeUp(i) })));
    expect(answers.map((answer) => answer.body.error)).toEqual(Array(8).fill("policy_denied"));
    expect(answers[0]!.body.detail).toContain("rule release: ref is refs/heads/feat-x");
    const spentByDenied = platformCalls().length;
    expect({ spentByPlain, spentByDenied, lookups: lookupsOfTargets().length }).toEqual({ spentByPlain, spentByDenied: 0, lookups: 0 });
    // Another repository of the owner, never looked up before: its installation lookup is not starved.
    const docs = await mint({ repository: "octo-org/docs" }, {}, "docs");
    expect(docs.status).toBe(200);
  });

  it("an allowed job's lookups that find nothing spend its own repository's share (503 installation_lookups_limited past it), never the owner's: another repository's job still gets its token", async () => {
    policies(null);
    t.broker.env.UPSTREAM_POINTS_PER_MINUTE = "500"; // a repository's share: 10 lookups that find nothing a minute
    const first = await mint(TAG_JOB, { repositories: madeUp(0).slice(0, 8) });
    expect(first.body).toEqual(denied("made-up-0-0"));
    const limited = await mint(TAG_JOB, { repositories: madeUp(1).slice(0, 8) });
    expect(limited.status).toBe(503);
    expect(limited.body).toEqual({ error: "installation_lookups_limited" });
    expect(t.fx.sim.requests.filter((r) => r.path.startsWith("/repos/octo-org/made-up-")).length).toBe(10);
    const docs = await mint({ repository: "octo-org/docs" }, {}, "docs");
    expect(docs.status).toBe(200);
    // Named again, the made-up names are remembered (POLICY_CACHE_SECONDS): no lookup, the same denial.
    t.fx.sim.clearRequests();
    expect((await mint(TAG_JOB, { repositories: madeUp(0).slice(0, 8) })).body).toEqual(denied("made-up-0-0"));
    expect(lookupsOfTargets()).toEqual([]);
  });
});

describe("a denial by the owner policy names its rules only", () => {
  const OWNER = `rules:
  - name: services
    repositories: [payments-core, billing-*]
    if: {event: push, workflow: .github/workflows/deploy.yml}
    permissions: {contents: write}
  - name: docs-only
    repositories: [docs]
    permissions: {contents: read}
`;

  it("the answer names the owner rules and nothing of their conditions or lists; the audit line keeps the full reason", async () => {
    policies(OWNER);
    const answer = await mint(TAG_JOB);
    expect(answer.status).toBe(403);
    expect(answer.body).toEqual({
      error: "policy_denied",
      detail: "owner policy: no rule holds (services, docs-only) for this job (its conditions are not shown; the owner's .github/tokensmith-org.yml has them)",
    });
    for (const secret of ["payments-core", "billing", "deploy.yml", "docs]", "event", "is not in"]) expect(String(answer.body.detail)).not.toContain(secret);
    const [line] = audit("token_denied");
    expect(line).toMatchObject({ detail: answer.body.detail, reason: "owner policy: rule services: repository app is not in one of payments-core, billing-*; rule docs-only: repository app is not in docs" });
  });

  it("a rule the request names: that rule's name only", async () => {
    policies(OWNER);
    const answer = await mint(TAG_JOB, { rule: "services" });
    expect(answer.body).toEqual({ error: "policy_denied", detail: "owner policy: rule services does not hold for this job (its conditions are not shown; the owner's .github/tokensmith-org.yml has them)" });
  });

  it("a denial by the caller's own repository policy keeps its detail (the condition, the claim, the pattern)", async () => {
    policies(OWNER, { app: "rules:\n  - name: release\n    if: {event: push, ref: refs/tags/v*}\n    permissions: {contents: write}\n" });
    const answer = await mint(BRANCH_JOB);
    expect(answer.body).toEqual({ error: "policy_denied", detail: "rule release: ref is refs/heads/feat-x, wants refs/tags/v*" });
  });
});
