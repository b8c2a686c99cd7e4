// /token mints for the repository the OIDC token was issued in — by its id, on its owner's
// installation (by the owner's id), and only if the platform's answer names exactly it — and tells
// a transient platform failure (Retry-After) from a permanent refusal (none). Over HTTP, against
// the simulator (which models account renames and re-created repositories as GitHub does).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { RequestError } from "@octokit/request-error";
import { BrokerError } from "../shared/broker-error.js";
import type { Installation } from "../server/installation/find-installation.js";
import type { MintedRepository } from "../server/installation/mint-installation-token.js";
import { installationServes, mintedForScope, mintedForScopes, type RepositoryScope } from "../server/installation/repository-scope.js";
import { transientRetryAfter } from "../server/github/transient-failure.js";
import { readRepositoryIdentity } from "../server/token/trust.js";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { INSTALLED_PERMISSIONS } from "./support/fixtures.js";
import { repositoryJson } from "../simulator/github-state.js";
import { createSimulator, type FaultResponse, type Simulator } from "../simulator/index.js";

const SECRET = "sign-trigger-secret-repo-id-0123456789";
const secrets: string[] = [SECRET];
const t = brokerPerTest({
  graphql: true,
  secrets,
  env: { PROCESS_TRIGGER_SECRET: SECRET },
  broker: { timing: { upstreamTimeoutMs: 1_000 }, retry: { attempts: 2, baseDelayMs: 10, maxWaitMs: 1000 } },
});

let ent: Simulator;
let entApp: { id: number; privateKeyPem: string };
beforeAll(async () => {
  ent = await createSimulator({ flavor: "enterprise" });
  entApp = ent.createApp();
  secrets.push(entApp.privateKeyPem);
});
afterAll(async () => {
  secrets.push(...ent.tokens.keys());
  await ent.close();
});

async function exchange(sim: Simulator, repository: string, claims: Record<string, unknown> = {}) {
  const oidcToken = await sim.oidc.sign({ repository, ...claims });
  secrets.push(oidcToken);
  const [owner, repo] = repository.split("/");
  const res = await postJson(`${t.broker.url}/token`, { oidcToken, owner, repo });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

const mintsOn = (sim: Simulator) => sim.requests.filter((r) => r.method === "POST" && /\/access_tokens$/.test(r.path));
const liveTokensOf = (sim: Simulator, installationId: number) =>
  [...sim.tokens.values()].filter((issued) => issued.installationId === installationId && !issued.revoked);
const auditLines = () => t.broker.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.audit === "token_minted");

function useEnterprise(installationId?: number): void {
  Object.assign(t.broker.env, {
    ENT_OIDC_ISSUER: ent.oidc.issuer,
    ENT_API_BASE: ent.apiBase,
    ENT_APP_ID: String(entApp.id),
    ENT_APP_PRIVATE_KEY: entApp.privateKeyPem,
    ENT_APP_INSTALLATION_ID: installationId === undefined ? undefined : String(installationId),
  });
}

describe("ENT_APP_INSTALLATION_ID never mints across owners", () => {
  let acmeInstallation: number;
  beforeAll(() => {
    acmeInstallation = ent.addInstallation({ appId: entApp.id, account: "acme", permissions: { ...INSTALLED_PERMISSIONS }, repositories: ["widgets"] });
    ent.repository("mallory", "widgets");
  });

  it("a job in mallory/widgets gets 404 app_not_installed, and nothing is minted for acme/widgets", async () => {
    ent.clearRequests();
    useEnterprise(acmeInstallation);
    const before = liveTokensOf(ent, acmeInstallation).length;
    const res = await exchange(ent, "mallory/widgets");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
    expect(res.headers.get("retry-after")).toBeNull();
    expect(mintsOn(ent)).toHaveLength(0);
    expect(liveTokensOf(ent, acmeInstallation)).toHaveLength(before);
    expect(auditLines()).toHaveLength(0);
  });

  it("acme's own job still gets its token, minted by repository id, and the audit line names the ids", async () => {
    ent.clearRequests();
    useEnterprise(acmeInstallation);
    const widgets = ent.repository("acme", "widgets");
    const res = await exchange(ent, "acme/widgets");
    expect(res.status).toBe(200);
    expect(res.body.repository).toBe("acme/widgets");
    expect(mintsOn(ent).map((r) => r.body)).toEqual([{ repository_ids: [widgets.id], permissions: { contents: "write", pull_requests: "write" } }]);
    expect(ent.tokens.get(res.body.token as string)?.repositories).toEqual(["widgets"]);
    const [audit] = auditLines();
    expect(audit).toMatchObject({ repository: "acme/widgets", repository_id: widgets.id, repository_owner_id: widgets.ownerId, installation_id: acmeInstallation });
  });

  it("the per-repository lookup is held to the owner id too: another account's installation in its answer mints nothing", async () => {
    ent.clearRequests();
    useEnterprise(acmeInstallation);
    expect((await exchange(ent, "acme/widgets")).status).toBe(200);
    // acme's installation exactly as the platform wrote it, answered to mallory's lookup (as a
    // followed redirect or a confused proxy would).
    const acmeJson = ent.requests.find((r) => r.method === "GET" && r.path.endsWith(`/app/installations/${acmeInstallation}`))!.response!.body;
    ent.clearRequests();
    useEnterprise();
    ent.faults.add({ method: "GET", path: /\/repos\/mallory\/widgets\/installation$/, times: 1, respond: { status: 200, body: acmeJson } });
    const res = await exchange(ent, "mallory/widgets");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
    expect(ent.requests.filter((r) => /\/repos\/mallory\/widgets\/installation$/.test(r.path))).toHaveLength(1);
    expect(mintsOn(ent)).toHaveLength(0);
  });
});

describe("the claims' repository_id is the repository minted for", () => {
  it("a still-valid token of a deleted repository does not mint for its re-created namesake", async () => {
    const { sim } = t.fx;
    const installationId = sim.addInstallation({ appId: t.fx.app.id, account: "phoenix-org", permissions: { ...INSTALLED_PERMISSIONS }, repositories: ["tool"] });
    // Two tokens of the old repository's job (one token mints once): the second is replayed after the re-creation.
    const oldToken = await sim.oidc.sign({ repository: "phoenix-org/tool" });
    const stillValid = await sim.oidc.sign({ repository: "phoenix-org/tool" });
    secrets.push(oldToken, stillValid);
    const send = async (oidcToken: string) => {
      const res = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "phoenix-org", repo: "tool" });
      if (typeof res.body?.token === "string") secrets.push(res.body.token);
      return res;
    };
    expect((await send(oldToken)).status).toBe(200); // the installation is now cached

    const oldId = sim.repository("phoenix-org", "tool").id;
    sim.deleteRepository("phoenix-org", "tool");
    const reborn = sim.repository("phoenix-org", "tool");
    expect(reborn.id).not.toBe(oldId);
    (sim.installation(installationId).repositories as string[]).push("tool");
    sim.clearRequests();

    const live = liveTokensOf(sim, installationId).length;
    const res = await send(stillValid);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
    expect(res.headers.get("retry-after")).toBeNull();
    expect(liveTokensOf(sim, installationId)).toHaveLength(live);
    // The cached installation's refusal is asked again once from a fresh lookup: refused again.
    expect(mintsOn(sim).map((r) => (r.body as { repository_ids?: number[] }).repository_ids)).toEqual([[oldId], [oldId]]);

    // A job of the re-created repository (its token names the new id) is served.
    const fresh = await exchange(sim, "phoenix-org/tool");
    expect(fresh.status).toBe(200);
    expect(fresh.body.repository).toBe("phoenix-org/tool");
  });

  it("after an account rename, a cached installation never mints for the old owner's repository", async () => {
    const { sim } = t.fx;
    const installationId = sim.addInstallation({ appId: t.fx.app.id, account: "renamed-org", permissions: { ...INSTALLED_PERMISSIONS }, repositories: ["widgets"] });
    expect((await exchange(sim, "renamed-org/widgets")).status).toBe(200); // cached for 5 minutes

    sim.renameAccount("renamed-org", "renamed-org-2");
    // Someone else takes the freed login and creates a repository of the same name.
    const squatted = sim.repository("renamed-org", "widgets");
    expect(squatted.ownerId).not.toBe(sim.repository("renamed-org-2", "widgets").ownerId);
    sim.clearRequests();

    const live = liveTokensOf(sim, installationId).length;
    const res = await exchange(sim, "renamed-org/widgets");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
    expect(mintsOn(sim)).toHaveLength(0);
    expect(liveTokensOf(sim, installationId)).toHaveLength(live);

    // The renamed owner's own jobs (same ids, new login) are served by the same installation.
    const renamed = await exchange(sim, "renamed-org-2/widgets");
    expect(renamed.status).toBe(200);
    expect(sim.tokens.get(renamed.body.token as string)?.installationId).toBe(installationId);
  });

  it.each([
    ["no repository_id", { repository_id: undefined }],
    ["no repository_owner_id", { repository_owner_id: undefined }],
    ["a non-numeric repository_id", { repository_id: "12ab" }],
    ["a numeric (not string) repository_owner_id", { repository_owner_id: 654321 }],
    ["a zero repository_id", { repository_id: "0" }],
  ])("a token with %s is 401 claim_invalid, with nothing asked of the platform", async (_name, claims) => {
    const res = await exchange(t.fx.sim, "octo-org/app", claims);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "invalid_oidc_token", reason: "claim_invalid" });
    expect(t.fx.sim.requests.filter((r) => !r.path.startsWith("/oidc"))).toHaveLength(0);
  });

  it("a repository_id of another repository of the same installation is refused by the platform: 404", async () => {
    const other = t.fx.sim.repository("octo-org", "other");
    const res = await exchange(t.fx.sim, "octo-org/app", { repository_id: String(other.id) });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
    expect(liveTokensOf(t.fx.sim, t.fx.installationId).filter((issued) => issued.repositories !== "all" && issued.repositories.includes("other"))).toHaveLength(0);
  });
});

describe("a mint answer that does not name exactly the repository asked for", () => {
  /** A real token of the installation, answered as the platform would, but scoped to `names`. */
  function misScopedAnswer(names: string[] | "all") {
    const { sim, installationId } = t.fx;
    const token = sim.issueToken(installationId, { permissions: { contents: "write", pull_requests: "write" }, repositories: names });
    const body: Record<string, unknown> = {
      token,
      expires_at: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
      permissions: { contents: "write", pull_requests: "write" },
      repository_selection: names === "all" ? "all" : "selected",
    };
    if (names !== "all") body.repositories = names.map((name) => repositoryJson(sim.repository("octo-org", name), { apiBase: sim.apiBase, url: sim.url }));
    sim.faults.add({ method: "POST", path: /\/access_tokens$/, times: 1, respond: { status: 201, body } });
    return token;
  }
  const revocations = (token: string) =>
    t.fx.sim.requests.filter((r) => r.method === "DELETE" && r.path === "/installation/token" && r.auth.kind === "installation" && r.auth.token === token);

  it.each([
    ["another repository", ["other"]],
    ["the repository and another", ["app", "other"]],
    ["no repositories (the whole installation)", "all"],
  ] as Array<[string, string[] | "all"]>)("/token: naming %s → 404, and the minted token is revoked at once", async (_name, names) => {
    const token = misScopedAnswer(names);
    const res = await exchange(t.fx.sim, "octo-org/app");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
    expect(JSON.stringify(res.body)).not.toContain(token);
    expect(revocations(token)).toHaveLength(1);
    expect(t.fx.sim.tokens.get(token)?.revoked).toBe(true);
    expect(t.broker.logs.some((line) => line.includes('"revoked":true'))).toBe(true);
    expect(auditLines()).toHaveLength(0);
  });

  it("/sign: naming another repository → 502 installation_token_failed, revoked, no commit attempted", async () => {
    const token = misScopedAnswer(["other"]);
    const res = await postJson(
      `${t.broker.url}/sign`,
      { repo: "octo-org/app", branch: "main", expected_head_oid: "a".repeat(40), message: { headline: "chore: x" }, additions: [{ path: "X", contents: "eA==" }] },
      { authorization: `Bearer ${SECRET}` },
    );
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ error: "installation_token_failed" });
    expect(revocations(token)).toHaveLength(1);
    expect(t.fx.sim.tokens.get(token)?.revoked).toBe(true);
    expect(t.fx.sim.requests.filter((r) => r.path.endsWith("graphql"))).toHaveLength(0);
  });
});

describe("Retry-After: on transient platform failures only", () => {
  const LOOKUP = /\/repos\/octo-org\/app\/installation$/;
  const MINT = /\/access_tokens$/;
  const inSeconds = (s: number) => String(Math.floor(Date.now() / 1000) + s);
  const sign = () =>
    postJson(
      `${t.broker.url}/sign`,
      { repo: "octo-org/app", branch: "main", expected_head_oid: "a".repeat(40), message: { headline: "chore: x" }, additions: [{ path: "X", contents: "eA==" }] },
      { authorization: `Bearer ${SECRET}` },
    );

  it.each([
    ["lookup 503", "GET", LOOKUP, { status: 503, body: { message: "Service Unavailable" } }, 500, "github_installation_lookup_failed", 5],
    ["lookup connection reset", "GET", LOOKUP, "reset", 500, "github_installation_lookup_failed", 5],
    ["lookup timeout", "GET", LOOKUP, "hang", 500, "github_installation_lookup_failed", 5],
    ["lookup answer's gzip cut short", "GET", LOOKUP, "truncated-gzip", 500, "github_installation_lookup_failed", 5],
    ["mint 502", "POST", MINT, { status: 502, body: { message: "Server Error" } }, 502, "installation_token_failed", 5],
    ["mint connection reset", "POST", MINT, "reset", 502, "installation_token_failed", 5],
    ["mint answer's gzip cut short", "POST", MINT, "truncated-gzip", 502, "installation_token_failed", 5],
    ["mint secondary rate limit (retry-after 90)", "POST", MINT, { status: 403, headers: { "retry-after": "90" }, body: { message: "You have exceeded a secondary rate limit." } }, 502, "installation_token_failed", 90],
    ["mint 429 (retry-after 30)", "POST", MINT, { status: 429, headers: { "retry-after": "30" }, body: { message: "Too Many Requests" } }, 502, "installation_token_failed", 30],
  ] as Array<[string, string, RegExp, FaultResponse, number, string, number]>)("%s: the route's code, with Retry-After", async (_name, method, path, respond, status, code, seconds) => {
    t.fx.sim.faults.add({ method, path, respond });
    const res = await exchange(t.fx.sim, "octo-org/app");
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: code });
    expect(res.headers.get("retry-after")).toBe(String(seconds));
  });

  it("a primary rate limit tells the wait until its reset", async () => {
    t.fx.sim.faults.add({
      method: "POST", path: MINT,
      respond: { status: 403, headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": inSeconds(600) }, body: { message: "API rate limit exceeded for installation." } },
    });
    const res = await exchange(t.fx.sim, "octo-org/app");
    expect(res.status).toBe(502);
    const wait = Number(res.headers.get("retry-after"));
    expect(wait).toBeGreaterThan(400);
    expect(wait).toBeLessThanOrEqual(601);
  });

  it.each([
    ["lookup 403", "GET", LOOKUP, { status: 403, body: { message: "Resource not accessible by integration" } }, 500, "github_installation_lookup_failed"],
    ["lookup 404", "GET", LOOKUP, { status: 404, body: { message: "Not Found" } }, 404, "app_not_installed"],
    ["lookup answer without an id", "GET", LOOKUP, { status: 200, body: { permissions: {} } }, 500, "github_installation_lookup_failed"],
    ["mint 403", "POST", MINT, { status: 403, body: { message: "Resource not accessible by integration" } }, 502, "installation_token_failed"],
    ["mint 404", "POST", MINT, { status: 404, body: { message: "Not Found" } }, 404, "app_not_installed"],
    ["mint 422", "POST", MINT, { status: 422, body: { message: "There is at least one repository that does not exist or is not accessible to the parent installation." } }, 404, "app_not_installed"],
    ["mint answer without a token", "POST", MINT, { status: 201, body: { expires_at: "2026-11-21T23:00:00Z" } }, 502, "installation_token_failed"],
  ] as Array<[string, string, RegExp, FaultResponse, number, string]>)("%s: the route's code, without Retry-After", async (_name, method, path, respond, status, code) => {
    t.fx.sim.faults.add({ method, path, respond });
    const res = await exchange(t.fx.sim, "octo-org/app");
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: code });
    expect(res.headers.get("retry-after")).toBeNull();
  });

  it("/sign keeps the mint's Retry-After on a transient failure, and sends none on a refusal", async () => {
    t.fx.sim.faults.add({ method: "POST", path: MINT, times: 2, respond: { status: 503, body: { message: "Service Unavailable" } } });
    const transient = await sign();
    expect(transient.status).toBe(502);
    expect(transient.body).toEqual({ error: "installation_token_failed" });
    expect(transient.headers.get("retry-after")).toBe("5");

    t.fx.sim.faults.add({ method: "POST", path: MINT, times: 1, respond: { status: 403, body: { message: "Resource not accessible by integration" } } });
    const refused = await sign();
    expect(refused.status).toBe(502);
    expect(refused.headers.get("retry-after")).toBeNull();
  });
});

describe("the trust decisions, as tables", () => {
  it.each([
    [{ repository_id: "123456", repository_owner_id: "654321" }, { repositoryId: 123456, ownerId: 654321 }],
    [{ repository_id: "9007199254740991", repository_owner_id: "1" }, { repositoryId: 9007199254740991, ownerId: 1 }],
    [{ repository_id: "123456" }, null],
    [{ repository_owner_id: "654321" }, null],
    [{ repository_id: 123456, repository_owner_id: "654321" }, null],
    [{ repository_id: "0", repository_owner_id: "654321" }, null],
    [{ repository_id: "0123", repository_owner_id: "654321" }, null],
    [{ repository_id: "-5", repository_owner_id: "654321" }, null],
    [{ repository_id: "1e3", repository_owner_id: "654321" }, null],
    [{ repository_id: " 12", repository_owner_id: "654321" }, null],
    [{ repository_id: "", repository_owner_id: "654321" }, null],
    [{ repository_id: "99999999999999999", repository_owner_id: "654321" }, null],
  ])("readRepositoryIdentity(%j) → %j", (claims, expected) => {
    if (expected) return expect(readRepositoryIdentity(claims)).toEqual(expected);
    try {
      readRepositoryIdentity(claims);
      throw new Error("accepted");
    } catch (error) {
      expect(error).toBeInstanceOf(BrokerError);
      expect((error as BrokerError).toBody()).toEqual({ error: "invalid_oidc_token", reason: "claim_invalid" });
    }
  });

  const byId: RepositoryScope = { owner: "acme", repo: "widgets", ids: { repositoryId: 11, ownerId: 22 } };
  const byName: RepositoryScope = { owner: "acme", repo: "widgets" };
  const installation = (account: Installation["account"]): Installation => ({ id: 1, permissions: {}, account });
  it.each([
    [byId, { login: "acme", id: 22 }, true],
    [byId, { login: "someone-else", id: 22 }, true], // renamed: the id decides
    [byId, { login: "acme", id: 23 }, false], // the login changed hands
    [byId, null, false],
    [byName, { login: "ACME", id: 99 }, true],
    [byName, { login: "acme-2", id: 22 }, false],
    [byName, null, false],
  ])("installationServes(%j, %j) → %s", (scope, account, expected) => {
    expect(installationServes(installation(account), scope)).toBe(expected);
  });

  const entry = (id: number | null, fullName: string | null, ownerId: number | null): MintedRepository => ({ id, fullName, ownerId, name: null, ownerLogin: null });
  it.each([
    [byId, [entry(11, "acme/widgets", 22)], true],
    [byId, [entry(11, "Acme/Widgets", 22)], true],
    [byId, [entry(12, "acme/widgets", 22)], false],
    [byId, [entry(11, "acme/widgets", 23)], false],
    [byId, [entry(11, "acme/gadgets", 22)], false],
    [byId, [entry(11, "mallory/widgets", 22)], false],
    [byId, [entry(11, "acme/widgets", 22), entry(12, "acme/gadgets", 22)], false],
    [byId, [], false],
    [byId, null, false],
    [byId, [entry(null, null, null)], false],
    [byName, [entry(5, "acme/widgets", 6)], true],
    [byName, [entry(5, "acme-2/widgets", 6)], false],
  ])("mintedForScope(%j, %j) → %s", (scope, repositories, expected) => {
    expect(mintedForScope(repositories, scope)).toBe(expected);
  });

  // With other repositories (/token's `repositories`): each by id, under the name asked for.
  const gadgets = { id: 12, name: "gadgets" };
  it.each([
    [[entry(11, "acme/widgets", 22), entry(12, "acme/gadgets", 22)], { ok: true, stale: [] }],
    [[entry(12, "Acme/Gadgets", 22), entry(11, "acme/widgets", 22)], { ok: true, stale: [] }], // any order, names case-insensitive
    [[entry(11, "acme/widgets", 22), entry(12, "acme/gizmos", 22)], { ok: false, stale: [gadgets] }], // renamed since its lookup
    [[entry(11, "acme/widgets", 22), entry(12, "acme/gadgets", 23)], { ok: false, stale: [gadgets] }], // another owner
    [[entry(11, "acme/widgets", 22)], { ok: false, stale: [gadgets] }],
    [[entry(11, "acme/widgets", 22), entry(12, "acme/gadgets", 22), entry(13, "acme/secrets", 22)], { ok: false, stale: [] }], // more than asked
    [[entry(11, "acme/widgets", 22), entry(12, "acme/gadgets", 22), entry(12, "acme/gadgets", 22)], { ok: false, stale: [] }],
    [[entry(12, "acme/gadgets", 22), entry(14, "acme/widgets", 22)], { ok: false, stale: [] }], // the caller's id is not there
    [null, { ok: false, stale: [gadgets] }],
  ])("mintedForScopes(byId, %j, [gadgets]) → %j", (repositories, expected) => {
    expect(mintedForScopes(repositories, { owner: "acme", repo: "widgets", ids: { repositoryId: 11, ownerId: 22 } }, [gadgets])).toEqual(expected);
  });

  const platformError = (status: number, headers: Record<string, string> = {}) =>
    new RequestError("x", status, { request: { method: "GET", url: "http://127.0.0.1/x", headers: {} }, response: { status, url: "http://127.0.0.1/x", headers, data: {} } });
  const NOW = 1_800_000_000_000;
  it.each([
    ["no response (network error, timeout)", new RequestError("reset", 500, { request: { method: "GET", url: "http://127.0.0.1/x", headers: {} } }), 5],
    ["500", platformError(500), 5],
    ["503", platformError(503), 5],
    ["403 with retry-after", platformError(403, { "retry-after": "42" }), 42],
    ["403 with retry-after 0", platformError(403, { "retry-after": "0" }), 1],
    ["403 primary limit", platformError(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(NOW / 1000 + 120) }), 120],
    ["429 without a wait", platformError(429), 60],
    ["403 plain", platformError(403), undefined],
    ["403 with remaining quota", platformError(403, { "x-ratelimit-remaining": "10", "x-ratelimit-reset": String(NOW / 1000 + 120) }), undefined],
    ["401", platformError(401), undefined],
    ["404", platformError(404), undefined],
    ["422", platformError(422), undefined],
    ["not a platform error", new Error("boom"), undefined],
  ])("transientRetryAfter: %s", (_name, error, expected) => {
    expect(transientRetryAfter(error, NOW)).toBe(expected);
  });
});
