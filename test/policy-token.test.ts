// POST /token with trust policies, over HTTP through the simulator (docs/policies.md
//): each code (policy_denied, policy_invalid, policy_unavailable), the modes, named rules,
// the owner policy, the cache (ETag/304, push invalidation, no extra platform requests in steady
// state), and audit lines that name the rule and the blob SHA.
import { describe, expect, it } from "@jest/globals";
import { randomUUID } from "node:crypto";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { signatureFor } from "../server/webhook/verify-signature.js";
import { blobSha } from "../simulator/rest-contents-routes.js";
import { EXAMPLE_POLICY } from "./support/example-policy.js";

const SECRET = "policy-webhook-secret-0123456789abcd";
let clockOffsetMs = 0;
const t = brokerPerTest({
  env: { HOST_WEBHOOK_SECRET: SECRET, TOKEN_POLICY: "optional" },
  broker: { now: () => Date.now() + clockOffsetMs },
  setup: (fx) => {
    fx.sim.git.createBranch("octo-org/app", "main", { files: { "README.md": "# app\n" } });
    fx.sim.git.createBranch("octo-org/.github", "main", { files: { "README.md": "# org\n" } });
    fx.sim.installation(fx.installationId).repositories = ["app", "other", ".github"];
  },
});

const POLICY = EXAMPLE_POLICY;
const TAG_JOB = { ref: "refs/tags/v1.2.0", workflow_ref: "octo-org/app/.github/workflows/release.yml@refs/tags/v1.2.0" };

function setPolicy(text: string | null, repository = "octo-org/app", path = ".github/tokensmith.yml") {
  t.fx.sim.git.setFile(repository, path, text);
}

async function mint(claims: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const oidcToken = await t.fx.sim.oidc.sign(claims);
  return postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app", ...extra });
}
const tokenPermissions = (token: unknown) => t.fx.sim.tokens.get(String(token))?.permissions;
const platformCalls = () => t.fx.sim.requests.filter((r) => !r.path.startsWith("/oidc"));
const contentsReads = () => t.fx.sim.requests.filter((r) => /\/contents(\/|$)/.test(r.path));
const audit = (name: string) => t.broker.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.audit === name);

async function sendPolicyPush(repository: string, paths: string[], change: "added" | "modified" = "modified") {
  const [owner, name] = repository.split("/") as [string, string];
  const repo = t.fx.sim.repository(owner, name);
  const raw = JSON.stringify({
    ref: "refs/heads/main", deleted: false, forced: false,
    repository: { id: repo.id, name, full_name: repository, default_branch: "main", owner: { login: owner, id: repo.ownerId } },
    commits: [{ id: "c1", added: [], modified: [], removed: [], [change]: paths }],
    installation: { id: t.fx.installationId },
  });
  const response = await fetch(`${t.broker.url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as unknown };
}

describe("a repository policy decides who gets which token", () => {
  it("no policy (TOKEN_POLICY optional): the default token, TOKEN_PERMISSIONS ∩ installation", async () => {
    setPolicy(null);
    const answer = await mint();
    expect(answer.status).toBe(200);
    expect(tokenPermissions(answer.body.token)).toEqual({ contents: "write", pull_requests: "write" });
  });

  it("the release rule gives a tag push of release.yml its write token; a pull-request job gets contents read only", async () => {
    setPolicy(POLICY);
    const release = await mint(TAG_JOB);
    expect(release.status).toBe(200);
    expect(tokenPermissions(release.body.token)).toEqual({ contents: "write", pull_requests: "write" });
    const pr = await mint({ event_name: "pull_request", ref: "refs/pull/7/merge" });
    expect(pr.status).toBe(200);
    expect(tokenPermissions(pr.body.token)).toEqual({ contents: "read" });
    // Audit lines name the rule and the policy's blob SHA.
    const sha = blobSha(Buffer.from(POLICY));
    expect(audit("token_minted").map((entry) => [entry.policy_rule, entry.policy_sha])).toEqual([["release", sha], ["pull-requests", sha]]);
  });

  it("no rule holds → 403 policy_denied whose detail names each rule's failed condition and the claim's value; nothing minted", async () => {
    setPolicy(POLICY);
    const before = t.fx.sim.tokens.size;
    const answer = await mint({ ref: "refs/heads/feat-x" });
    expect(answer.status).toBe(403);
    expect(answer.body).toEqual({
      error: "policy_denied",
      detail: "rule release: ref is refs/heads/feat-x, wants refs/tags/v*; rule pull-requests: event is push, wants one of pull_request, pull_request_target",
    });
    // Only the broker's own reader token was minted (the first read of this broker), no token for the job.
    expect(t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens")).map((r) => (r.body as { permissions: unknown }).permissions)).toEqual([{ contents: "read" }]);
    expect(t.fx.sim.tokens.size - before).toBe(1);
    expect(audit("token_denied")).toEqual([expect.objectContaining({ code: "policy_denied", repository: "octo-org/app", policy_sha: blobSha(Buffer.from(POLICY)) })]);
  });

  it("a named rule (`rule`) is the only one tried; a malformed name is 400 invalid_request", async () => {
    setPolicy(POLICY);
    expect((await mint(TAG_JOB, { rule: "release" })).status).toBe(200);
    expect((await mint(TAG_JOB, { rule: "pull-requests" })).body).toEqual({ error: "policy_denied", detail: "rule pull-requests: event is push, wants one of pull_request, pull_request_target" });
    expect((await mint(TAG_JOB, { rule: "Release!" })).body).toEqual({ error: "invalid_request" });
  });

  it("a policy that does not validate → 403 policy_invalid naming the file and line (fail closed)", async () => {
    setPolicy("rules:\n  - name: release\n    if: {branch: main}\n    permissions: {contents: write}\n");
    const answer = await mint(TAG_JOB);
    expect(answer.status).toBe(403);
    expect(answer.body).toEqual({ error: "policy_invalid", detail: ".github/tokensmith.yml line 3: rules.0.if: unknown key branch" });
  });

  it("TOKEN_POLICY=required: no policy → policy_denied; off: never read, even an invalid one", async () => {
    setPolicy(null);
    t.broker.env.TOKEN_POLICY = "required";
    expect((await mint()).body).toEqual({ error: "policy_denied", detail: "no policy applies to this repository and the broker requires one (TOKEN_POLICY=required)" });
    setPolicy("rules: [\n");
    t.broker.env.TOKEN_POLICY = "off";
    t.fx.sim.clearRequests();
    const answer = await mint();
    expect(answer.status).toBe(200);
    expect(contentsReads()).toEqual([]);
  });
});

describe("the platform failing is never 'no policy'", () => {
  it("a contents read answered 500 → 503 policy_unavailable with Retry-After; nothing minted for the job", async () => {
    setPolicy(POLICY);
    t.fx.sim.faults.add({ method: "GET", path: /\/contents\//, respond: { status: 500, body: { message: "Server Error" } } });
    const answer = await mint(TAG_JOB);
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({ error: "policy_unavailable" });
    expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens")).every((r) => JSON.stringify((r.body as { permissions: unknown }).permissions) === '{"contents":"read"}')).toBe(true);
    t.fx.sim.faults.clear();
    expect((await mint(TAG_JOB)).status).toBe(200);
  });

  it("the reader token's mint failing → 503 policy_unavailable", async () => {
    setPolicy(POLICY);
    t.fx.sim.faults.add({ method: "POST", path: /\/access_tokens$/, times: 10, respond: { status: 502, body: { message: "Bad Gateway" } } });
    const answer = await mint(TAG_JOB);
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({ error: "policy_unavailable" });
    expect(answer.headers.get("retry-after")).not.toBeNull();
  });
});

describe("cost: cached policy, shared reader token, conditional reads", () => {
  it("steady state: a /token makes exactly as many platform requests with a policy as without one (one mint)", async () => {
    setPolicy(null);
    t.broker.env.TOKEN_POLICY = "off";
    await mint(TAG_JOB); // warm: installation lookup cached
    t.fx.sim.clearRequests();
    await mint(TAG_JOB);
    const withoutPolicy = platformCalls().map((r) => `${r.method} ${r.path}`);
    t.broker.env.TOKEN_POLICY = "optional";
    setPolicy(POLICY);
    await mint(TAG_JOB); // warm: reader token, policy read
    t.fx.sim.clearRequests();
    for (let i = 0; i < 3; i += 1) expect((await mint(TAG_JOB)).status).toBe(200);
    const withPolicy = platformCalls().map((r) => `${r.method} ${r.path}`);
    expect(withoutPolicy).toEqual([`POST /app/installations/${t.fx.installationId}/access_tokens`]);
    expect(withPolicy).toEqual([...withoutPolicy, ...withoutPolicy, ...withoutPolicy]);
  });

  it("steady state with the default TOKEN_POLICY and no policy file: each /token is one mint; the files are asked again once per POLICY_CACHE_SECONDS", async () => {
    setPolicy(null);
    t.broker.env.POLICY_CACHE_SECONDS = "30";
    const mintPath = `POST /app/installations/${t.fx.installationId}/access_tokens`;
    // Past the cache: for each file found absent, the listing that showed it absent, asked again conditionally.
    const reads = ["GET /repos/octo-org/.github/contents", "GET /repos/octo-org/app/contents"];
    const calls = () => platformCalls().map((r) => `${r.method} ${r.path}`);
    clockOffsetMs = 0;
    try {
      expect((await mint(TAG_JOB)).status).toBe(200); // warm: installation lookup, reader token, both files read (404)
      t.fx.sim.clearRequests();
      for (let i = 0; i < 5; i += 1) expect((await mint(TAG_JOB)).status).toBe(200);
      expect(calls()).toEqual(Array(5).fill(mintPath));
      // Past the cache's lifetime: the two listings once more (304, no rate limit spent), the kept reader token, no other request.
      clockOffsetMs = 31_000;
      t.fx.sim.clearRequests();
      for (let i = 0; i < 3; i += 1) expect((await mint(TAG_JOB)).status).toBe(200);
      expect(calls().filter((call) => call !== mintPath).sort()).toEqual(reads);
      expect(contentsReads().map((r) => r.response!.status)).toEqual([304, 304]);
      expect(calls().filter((call) => call === mintPath)).toHaveLength(3);
    } finally {
      clockOffsetMs = 0;
    }
  });

  it("simultaneous jobs share one reader token and one read per file", async () => {
    setPolicy(POLICY);
    const answers = await Promise.all(Array.from({ length: 8 }, () => mint(TAG_JOB)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const readerMints = t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens") && JSON.stringify((r.body as { permissions: unknown }).permissions) === '{"contents":"read"}');
    expect(readerMints).toHaveLength(1);
    // The org has no policy file: its 404 is followed by the listings that show it absent (one each).
    expect(contentsReads().map((r) => r.path).sort()).toEqual([
      "/repos/octo-org/.github/contents",
      "/repos/octo-org/.github/contents/.github",
      "/repos/octo-org/.github/contents/.github/tokensmith-org.yml",
      "/repos/octo-org/app/contents/.github/tokensmith.yml",
    ]);
  });

  it("after POLICY_CACHE_SECONDS the read is conditional: If-None-Match with the ETag, answered 304", async () => {
    setPolicy(POLICY);
    t.broker.env.POLICY_CACHE_SECONDS = "30";
    clockOffsetMs = 0;
    try {
      expect((await mint(TAG_JOB)).status).toBe(200);
      const first = contentsReads().find((r) => r.path.includes("/octo-org/app/"))!;
      expect(first.headers["if-none-match"]).toBeUndefined();
      t.fx.sim.clearRequests();
      clockOffsetMs = 31_000;
      expect((await mint(TAG_JOB)).status).toBe(200);
      const again = contentsReads().find((r) => r.path.includes("/octo-org/app/"))!;
      expect(again.headers["if-none-match"]).toBe(first.response!.headers.etag);
      expect(again.response!.status).toBe(304);
    } finally {
      clockOffsetMs = 0;
    }
  });

  it("a verified push to the default branch touching the policy drops the cache at once; the webhook answer is unchanged", async () => {
    setPolicy(POLICY);
    expect((await mint(TAG_JOB)).status).toBe(200);
    setPolicy("rules:\n  - name: reads\n    if: {event: push}\n    permissions: {contents: read}\n");
    // Cached: the old policy still holds until the push arrives.
    expect(tokenPermissions((await mint(TAG_JOB)).body.token)).toEqual({ contents: "write", pull_requests: "write" });
    const delivery = await sendPolicyPush("octo-org/app", [".github/tokensmith.yml"]);
    expect(delivery).toEqual({ status: 200, body: { ok: true, event: "push", skipped: "auto_update_disabled" } });
    expect(tokenPermissions((await mint(TAG_JOB)).body.token)).toEqual({ contents: "read" });
  });

  it("no policy file: the 404 (no ETag; counted against the installation's rate limit) is followed once by the directory's listing, whose ETag makes each expiry's re-check a 304 that costs no rate limit", async () => {
    setPolicy(null);
    t.fx.sim.git.setFile("octo-org/app", ".github/workflows/ci.yml", "on: push\n");
    t.broker.env.POLICY_CACHE_SECONDS = "30";
    const used = () => t.fx.sim.primaryRateLimitUsed(t.fx.installationId);
    const PR_JOB = { event_name: "pull_request", ref: "refs/pull/7/merge" };
    const reads = () => contentsReads().map((r) => `${r.path} ${r.response?.status}${r.headers["if-none-match"] ? " (conditional)" : ""}`).sort();
    const APP = "/repos/octo-org/app/contents";
    const ORG = "/repos/octo-org/.github/contents";
    const mintAt = async (offset: number, times = 1) => {
      t.fx.sim.clearRequests();
      clockOffsetMs = offset;
      const before = used();
      const tokens = [];
      for (let i = 0; i < times; i += 1) tokens.push(tokenPermissions((await mint(PR_JOB)).body.token));
      return { tokens, reads: reads(), spent: used() - before };
    };
    const FULL = { contents: "write", pull_requests: "write" };
    try {
      // Cold, three jobs: each file 404 (no ETag), then the listing that shows it absent: the app's
      // .github; the org's .github repository has no .github directory (404), so its root.
      expect(await mintAt(0, 3)).toEqual({
        tokens: [FULL, FULL, FULL],
        reads: [`${APP}/.github 200`, `${APP}/.github/tokensmith.yml 404`, `${ORG} 200`, `${ORG}/.github 404`, `${ORG}/.github/tokensmith-org.yml 404`].sort(),
        spent: 5,
      });
      expect(contentsReads().every((r) => r.response?.status !== 404 || r.response.headers.etag === undefined)).toBe(true);
      // Each expiry: one conditional listing per file, 304, no rate limit.
      for (const offset of [31_000, 62_000]) {
        expect(await mintAt(offset, 3)).toEqual({ tokens: [FULL, FULL, FULL], reads: [`${APP}/.github 304 (conditional)`, `${ORG} 304 (conditional)`].sort(), spent: 0 });
      }
      // Something else in .github changed: a new listing (one request), still no policy.
      t.fx.sim.git.setFile("octo-org/app", ".github/workflows/ci.yml", "on: [push, pull_request]\n");
      expect(await mintAt(93_000)).toEqual({ tokens: [FULL], reads: [`${APP}/.github 200 (conditional)`, `${ORG} 304 (conditional)`].sort(), spent: 1 });
      // The file is added: "no policy" holds until the push of it arrives, which drops it at once.
      setPolicy(POLICY);
      expect(await mintAt(94_000)).toEqual({ tokens: [FULL], reads: [], spent: 0 });
      expect((await sendPolicyPush("octo-org/app", [".github/tokensmith.yml"], "added")).status).toBe(200);
      expect((await mintAt(95_000)).tokens).toEqual([{ contents: "read" }]);
      // Removed, then added again with no push delivered: the next expiry's listing names it, so it is read.
      setPolicy(null);
      expect((await sendPolicyPush("octo-org/app", [".github/tokensmith.yml"], "modified")).status).toBe(200);
      expect((await mintAt(96_000)).tokens).toEqual([FULL]);
      setPolicy(POLICY);
      expect(await mintAt(127_000)).toEqual({
        tokens: [{ contents: "read" }],
        reads: [`${APP}/.github 200 (conditional)`, `${APP}/.github/tokensmith.yml 200`, `${ORG} 304 (conditional)`].sort(),
        spent: 2,
      });
    } finally {
      clockOffsetMs = 0;
    }
  });

  it("a push that touches no policy file keeps the cache", async () => {
    setPolicy(POLICY);
    expect((await mint(TAG_JOB)).status).toBe(200);
    t.fx.sim.clearRequests();
    await sendPolicyPush("octo-org/app", ["README.md"]);
    expect((await mint(TAG_JOB)).status).toBe(200);
    expect(contentsReads()).toEqual([]);
  });

  it("a kept reader token the platform no longer takes (revoked) is replaced within the read: the job gets its token, one new reader mint", async () => {
    setPolicy(POLICY);
    expect((await mint(TAG_JOB)).status).toBe(200);
    const isReaderMint = (r: { method: string; path: string; body: unknown }) =>
      r.method === "POST" && r.path.endsWith("/access_tokens") && JSON.stringify((r.body as { permissions: unknown }).permissions) === '{"contents":"read"}';
    const readerToken = t.fx.sim.requests.find(isReaderMint)!.response!.body as { token: string };
    t.fx.sim.tokens.get(readerToken.token)!.revoked = true;
    clockOffsetMs = 61_000; // past the cached reads: the next /token reads again, with the revoked reader first
    try {
      t.fx.sim.clearRequests();
      const answer = await mint(TAG_JOB);
      expect(answer.status).toBe(200);
      expect(tokenPermissions(answer.body.token)).toEqual({ contents: "write", pull_requests: "write" });
      expect(t.fx.sim.requests.filter(isReaderMint)).toHaveLength(1);
      // The owner's policy is read first (its absent file by its listing's ETag): refused once (401,
      // the revoked reader), then asked again with the new one (304); then the repository's file by
      // its ETag, with the new reader already (304).
      expect(contentsReads().map((r) => r.response!.status)).toEqual([401, 304, 304]);
    } finally {
      clockOffsetMs = 0;
    }
  });
});

describe("installation changes", () => {
  it("an installation_repositories delivery drops the installation's reader token (answer unchanged: ignored)", async () => {
    setPolicy(POLICY);
    expect((await mint(TAG_JOB)).status).toBe(200);
    const raw = JSON.stringify({ action: "added", installation: { id: t.fx.installationId }, repositories_added: [{ name: ".github" }] });
    const response = await fetch(`${t.broker.url}/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "installation_repositories", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(SECRET, raw) },
      body: raw,
    });
    expect({ status: response.status, body: (await response.json()) as unknown }).toEqual({ status: 200, body: { ok: true, ignored: "installation_repositories" } });
    clockOffsetMs = 61_000; // past the cached reads, so the next /token reads again
    try {
      t.fx.sim.clearRequests();
      expect((await mint(TAG_JOB)).status).toBe(200);
      const readerMints = t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens") && JSON.stringify((r.body as { permissions: unknown }).permissions) === '{"contents":"read"}');
      expect(readerMints).toHaveLength(1);
    } finally {
      clockOffsetMs = 0;
    }
  });
});

describe("owner policy", () => {
  it("a ceiling for every repository of the owner; repository_policies: ignore disregards the repository's file", async () => {
    setPolicy(POLICY);
    setPolicy("rules:\n  - name: org-read\n    if: {event: push}\n    permissions: {contents: read, pull_requests: write}\n", "octo-org/.github", ".github/tokensmith-org.yml");
    try {
      const capped = await mint(TAG_JOB);
      expect(tokenPermissions(capped.body.token)).toEqual({ contents: "read", pull_requests: "write" });
      expect(audit("token_minted").at(-1)).toMatchObject({ policy_rule: "release", owner_policy_rule: "org-read" });
      setPolicy("repository_policies: ignore\nrules:\n  - name: services\n    repositories: [svc-*]\n    permissions: {contents: write}\n", "octo-org/.github", ".github/tokensmith-org.yml");
      await sendPolicyPush("octo-org/.github", [".github/tokensmith-org.yml"]);
      // The job is told the owner rule's name, never its repositories (the .github repository may be private).
      expect((await mint(TAG_JOB)).body).toEqual({ error: "policy_denied", detail: "owner policy: rule services does not hold for this job (its conditions are not shown; the owner's .github/tokensmith-org.yml has them)" });
    } finally {
      setPolicy(null, "octo-org/.github", ".github/tokensmith-org.yml");
    }
  });
});

describe("a policy rule and the step's own permissions: one grant, TOKEN_PERMISSIONS ∩ rule ∩ installation", () => {
  const PR_JOB = { event_name: "pull_request", ref: "refs/pull/7/merge" };

  it("asking for more than the rule allows → 403 permissions_not_granted whose detail names the rule; within it, exactly what was asked", async () => {
    setPolicy(POLICY);
    const denied = await mint(PR_JOB, { permissions: { contents: "write", pull_requests: "read" } });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({
      error: "permissions_not_granted",
      detail: "contents: write withheld by rule pull-requests (read only); pull_requests: read withheld by rule pull-requests (not granted)",
    });
    expect(audit("token_minted")).toEqual([]);
    const granted = await mint(PR_JOB, { permissions: { contents: "read" } });
    expect(granted.status).toBe(200);
    expect(granted.body.permissions).toEqual({ contents: "read" });
    expect(tokenPermissions(granted.body.token)).toEqual({ contents: "read" });
    expect(audit("token_minted")).toEqual([expect.objectContaining({ policy_rule: "pull-requests", requested_permissions: { contents: "read" } })]);
  });

  it("an owner rule is named `owner rule <name>`; every ceiling that withholds a permission is named", async () => {
    setPolicy(POLICY);
    setPolicy("rules:\n  - name: org-read\n    if: {event: push}\n    permissions: {contents: read, pull_requests: write}\n", "octo-org/.github", ".github/tokensmith-org.yml");
    try {
      expect((await mint(TAG_JOB, { permissions: { contents: "write" } })).body).toEqual({ error: "permissions_not_granted", detail: "contents: write withheld by owner rule org-read (read only)" });
      expect((await mint(TAG_JOB, { permissions: { issues: "read" } })).body).toEqual({
        error: "permissions_not_granted",
        detail: "issues: read withheld by TOKEN_PERMISSIONS (not granted), rule release (not granted), owner rule org-read (not granted)",
      });
      const granted = await mint(TAG_JOB, { permissions: { pull_requests: "write" } });
      expect(tokenPermissions(granted.body.token)).toEqual({ pull_requests: "write" });
    } finally {
      setPolicy(null, "octo-org/.github", ".github/tokensmith-org.yml");
    }
  });

  it("without a request: the rule's permissions ∩ TOKEN_PERMISSIONS ∩ the installation", async () => {
    // issues is outside TOKEN_PERMISSIONS (and read only on the installation); pull_requests read by the rule.
    setPolicy("rules:\n  - name: wide\n    if: {event: push}\n    permissions: {contents: write, issues: write, pull_requests: read}\n");
    const answer = await mint();
    expect(answer.status).toBe(200);
    expect(answer.body.permissions).toEqual({ contents: "write", pull_requests: "read" });
    expect(tokenPermissions(answer.body.token)).toEqual({ contents: "write", pull_requests: "read" });
  });
});

describe("cache key", () => {
  it("a re-created repository (same name, new id) never gets the old one's cached policy", async () => {
    setPolicy("rules:\n  - name: reads\n    if: {event: push}\n    permissions: {contents: read}\n");
    expect(tokenPermissions((await mint({ ...TAG_JOB, repository: "octo-org/app" })).body.token)).toEqual({ contents: "read" });
    const oldId = t.fx.sim.repository("octo-org", "app").id;
    t.fx.sim.deleteRepository("octo-org", "app");
    expect(t.fx.sim.repository("octo-org", "app").id).not.toBe(oldId);
    const installation = t.fx.sim.installation(t.fx.installationId);
    installation.repositories = [...(installation.repositories as string[]), "app"];
    // The new repository's file, with no push delivered: only a key by id reads it now.
    setPolicy(POLICY);
    const answer = await mint({ ...TAG_JOB, repository: "octo-org/app" }); // ids from the platform's state
    expect(answer.body).toMatchObject({ repository: "octo-org/app" });
    expect(tokenPermissions(answer.body.token)).toEqual({ contents: "write", pull_requests: "write" });
  });
});
