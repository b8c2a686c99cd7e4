// GET /releases over HTTP, through the broker, to the loopback platform simulator: the ladder of
// checks (docs/api.md#get-releases), the answer's shape, the crawl (pagination, batching, drafts, prereleases), the
// caps and partial failures. Cache behaviour is in releases-cache.test.ts.
import { createPrivateKey, randomInt } from "node:crypto";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { SignJWT } from "jose";
import { releasesJson } from "../server/routes/releases.js";
import { repositoryJson } from "../simulator/github-state.js";
import { startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { getReleases, names, READ_WRITE, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";

let fx: ReleasesFixture;
let broker: TestBroker;
const installations: Record<"alpha" | "beta" | "gamma", number> = { alpha: 0, beta: 0, gamma: 0 };
const allLogs: string[] = [];
/** Looked for in the logs besides the App key, the trigger secret and every token the simulator issued. */
const secrets: string[] = [];
const ALPHA = names("svc", 130); // more than one page of 100

beforeAll(async () => {
  fx = await releasesFixture();
  // On all of its repositories: the crawl walks its listing (the mint answer lists none).
  installations.alpha = fx.install("alpha-org", ALPHA, undefined, "all");
  installations.beta = fx.install("beta-org", ["web", "api", "docs"], { contents: "read", metadata: "read" });
  // No contents permission: the platform hides releases, so every lookup fails.
  installations.gamma = fx.install("gamma-org", ["site", "blog"], { metadata: "read", issues: "write" });
  const r = fx.sim.releases;
  r.add("alpha-org/svc-000", { tagName: "v1.0.0", name: "One", createdAt: "2026-01-01T10:00:00Z" });
  r.add("alpha-org/svc-000", { tagName: "v1.1.0-rc.1", name: "One point one RC", isPrerelease: true, createdAt: "2026-02-01T10:00:00Z" });
  r.add("alpha-org/svc-001", { tagName: "v2.0.0", createdAt: "2026-01-01T10:00:00Z" });
  r.add("alpha-org/svc-001", { tagName: "v2.1.0", name: "Next", isDraft: true, createdAt: "2026-03-01T10:00:00Z" });
  r.add("alpha-org/svc-002", { tagName: "nameless", name: null, createdAt: "2026-01-05T00:00:00Z", publishedAt: "2026-01-06T00:00:00Z" });
  // Added newest first: "latest" is by creation time, not insertion order.
  r.add("alpha-org/svc-003", { tagName: "v3.2.0", createdAt: "2026-04-01T00:00:00Z" });
  r.add("alpha-org/svc-003", { tagName: "v3.1.0", createdAt: "2026-03-01T00:00:00Z" });
  r.add("alpha-org/svc-129", { tagName: "last", createdAt: "2026-01-01T00:00:00Z" });
  r.add("beta-org/api", { tagName: "api-7", createdAt: "2026-05-01T00:00:00Z" });
  r.add("gamma-org/site", { tagName: "hidden", createdAt: "2026-05-01T00:00:00Z" });
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(allLogs, [fx.app.privateKeyPem, TRIGGER_SECRET, ...secrets, ...fx.sim.tokens.keys()]);
});
beforeEach(async () => {
  fx.sim.clearRequests();
  fx.sim.faults.clear();
  broker = await startBroker({ ...fx.env });
});
afterEach(async () => {
  allLogs.push(...broker.logs);
  await broker.close();
});

const requestsTo = (method: string, pattern: RegExp) => fx.sim.requests.filter((r) => r.method === method && pattern.test(r.path));
const mints = () => requestsTo("POST", /^\/app\/installations\/\d+\/access_tokens$/);
/** The token the platform minted for this installation in the requests recorded since the last clear. */
const tokenOf = (installationId: number) => (mints().find((m) => m.path === `/app/installations/${installationId}/access_tokens`)?.response?.body as { token?: string } | undefined)?.token;
/**
 * beta-org's next mint answered by hand: a real token over its three repositories, whose answer
 * lists only `listed` (GitHub's full repository objects). Returns the token.
 */
function betaMintAnswers(listed: string[]): string {
  const token = fx.sim.issueToken(installations.beta, { permissions: { contents: "read", metadata: "read" }, repositories: ["web", "api", "docs"] });
  const repositories = listed.map((name) => repositoryJson(fx.sim.repository("beta-org", name), { apiBase: fx.sim.apiBase, url: fx.sim.url }));
  const expiresAt = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");
  const body = { token, expires_at: expiresAt, permissions: { contents: "read", metadata: "read" }, repository_selection: "selected", repositories };
  fx.sim.faults.add({ method: "POST", path: `/app/installations/${installations.beta}/access_tokens`, times: 1, respond: { status: 201, body } });
  return token;
}
const entry = (body: { repos: Array<{ repo: string; latest: unknown }> }, repo: string) => body.repos.find((r) => r.repo === repo);

describe("GET /releases failures (docs/api.md#get-releases)", () => {
  it.each(["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])("%s → 405 method_not_allowed with Allow: GET", async (method) => {
    const res = await getReleases(broker.url, `Bearer ${TRIGGER_SECRET}`, method);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
    expect(res.body).toEqual({ error: "method_not_allowed" });
  });

  it("503 releases_disabled when PROCESS_TRIGGER_SECRET is unset, whatever the bearer", async () => {
    delete broker.env.PROCESS_TRIGGER_SECRET;
    for (const auth of [null, `Bearer ${TRIGGER_SECRET}`, "Bearer wrong"]) {
      const res = await getReleases(broker.url, auth);
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: "releases_disabled" });
    }
    broker.env.PROCESS_TRIGGER_SECRET = "";
    expect((await getReleases(broker.url)).body).toEqual({ error: "releases_disabled" });
  });

  it.each([
    ["no Authorization header", null],
    ["a wrong secret", "Bearer not-the-secret"],
    ["the secret with a suffix", `Bearer ${TRIGGER_SECRET}x`],
    ["a prefix of the secret", `Bearer ${TRIGGER_SECRET.slice(0, -1)}`],
    ["another scheme", `Basic ${TRIGGER_SECRET}`],
    ["the bare secret", TRIGGER_SECRET],
    ["an empty bearer", "Bearer "],
  ])("401 unauthorized with %s", async (_name, auth) => {
    const res = await getReleases(broker.url, auth);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "unauthorized" });
  });

  it("checks the bearer before the App configuration (an unauthenticated caller learns nothing)", async () => {
    delete broker.env.HOST_APP_ID;
    expect((await getReleases(broker.url, "Bearer wrong")).body).toEqual({ error: "unauthorized" });
  });

  it.each([
    ["HOST_APP_ID unset", { HOST_APP_ID: undefined }],
    ["HOST_APP_PRIVATE_KEY unset", { HOST_APP_PRIVATE_KEY: undefined }],
    ["HOST_APP_PRIVATE_KEY unreadable", { HOST_APP_PRIVATE_KEY: "not a key" }],
  ])("503 app_unconfigured with %s", async (_name, change) => {
    Object.assign(broker.env, change);
    const res = await getReleases(broker.url);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: "app_unconfigured" });
  });

  it("reaches the platform for none of the failures", async () => {
    await getReleases(broker.url, null);
    await getReleases(broker.url, "Bearer wrong");
    delete broker.env.HOST_APP_ID;
    await getReleases(broker.url);
    expect(fx.sim.requests).toHaveLength(0);
  });

  it("500 internal_error, and nothing internal, when the installation listing itself fails", async () => {
    fx.sim.faults.add({ method: "GET", path: "/app/installations", respond: { status: 502, body: { message: "Server Error" } } });
    const res = await getReleases(broker.url);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "internal_error" });
    expect(requestsTo("GET", /^\/app\/installations$/)).toHaveLength(3); // retried, then given up
    expect(mints()).toHaveLength(0);
  });

  it("500 internal_error when the installation listing answers 200 with a body that is not JSON", async () => {
    fx.sim.faults.add({ method: "GET", path: "/app/installations", times: 1, respond: "garbage" });
    const res = await getReleases(broker.url);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "internal_error" });
    expect(requestsTo("GET", /^\/app\/installations$/)).toHaveLength(1); // a 200 is an answer: not retried
    expect(mints()).toHaveLength(0);
  });
});

describe("GET /releases success (docs/api.md#get-releases)", () => {
  it("answers the answer's shape, field by field", async () => {
    const before = Date.now();
    const res = await getReleases(broker.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(res.body).sort()).toEqual(["cached", "generated_at", "repos", "truncated"]);
    expect(res.body.generated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(res.body.generated_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(res.body.generated_at)).toBeLessThanOrEqual(Date.now());
    expect(res.body.truncated).toBe(false);
    expect(res.body.cached).toBe(false);
    expect(res.body.repos).toHaveLength(130 + 3 + 2);
    for (const item of res.body.repos) {
      expect(Object.keys(item).sort()).toEqual(["latest", "repo"]);
      expect(item.repo).toMatch(/^[a-z-]+\/[a-z0-9-]+$/);
      if (item.latest !== null) {
        expect(Object.keys(item.latest).sort()).toEqual(["draft", "name", "prerelease", "published_at", "tag", "url"]);
        expect(typeof item.latest.tag).toBe("string");
        expect(typeof item.latest.name).toBe("string");
        expect(typeof item.latest.url).toBe("string");
        expect(() => new URL(item.latest.url)).not.toThrow();
        expect(typeof item.latest.draft).toBe("boolean");
        expect(typeof item.latest.prerelease).toBe("boolean");
        expect(item.latest.published_at === null || !Number.isNaN(Date.parse(item.latest.published_at))).toBe(true);
      }
    }
    expect(entry(res.body, "beta-org/api")).toEqual({
      repo: "beta-org/api",
      latest: { tag: "api-7", name: "api-7", published_at: "2026-05-01T00:00:00Z", url: "https://github.com/beta-org/api/releases/tag/api-7", draft: false, prerelease: false },
    });
  });

  it("orders repositories by name, whatever order the crawl finished in", async () => {
    const { body } = await getReleases(broker.url);
    const repos = body.repos.map((r: { repo: string }) => r.repo);
    expect(repos).toEqual([...repos].sort());
    expect(new Set(repos).size).toBe(repos.length);
  });

  it("takes the newest release as the platform lists it: prereleases and drafts included and flagged", async () => {
    const { body } = await getReleases(broker.url);
    expect(entry(body, "alpha-org/svc-000")!.latest).toEqual({
      tag: "v1.1.0-rc.1", name: "One point one RC", published_at: "2026-02-01T10:00:00Z",
      url: "https://github.com/alpha-org/svc-000/releases/tag/v1.1.0-rc.1", draft: false, prerelease: true,
    });
    expect(entry(body, "alpha-org/svc-001")!.latest).toMatchObject({ tag: "v2.1.0", name: "Next", published_at: null, draft: true, prerelease: false });
    expect(entry(body, "alpha-org/svc-003")!.latest).toMatchObject({ tag: "v3.2.0", published_at: "2026-04-01T00:00:00Z" });
    expect(entry(body, "alpha-org/svc-002")!.latest).toMatchObject({ tag: "nameless", name: "", published_at: "2026-01-06T00:00:00Z" });
  });

  it("reports a repository without releases with latest: null", async () => {
    const { body } = await getReleases(broker.url);
    expect(entry(body, "alpha-org/svc-050")).toEqual({ repo: "alpha-org/svc-050", latest: null });
    expect(entry(body, "beta-org/web")).toEqual({ repo: "beta-org/web", latest: null });
    expect(body.repos.filter((r: { latest: unknown }) => r.latest !== null)).toHaveLength(6);
  });

  it("walks every page of every installation's repositories (130 in one installation)", async () => {
    const { body } = await getReleases(broker.url);
    expect(body.repos.filter((r: { repo: string }) => r.repo.startsWith("alpha-org/"))).toHaveLength(130);
    expect(entry(body, "alpha-org/svc-129")!.latest).toMatchObject({ tag: "last" });
    const listings = requestsTo("GET", /^\/installation\/repositories$/);
    // alpha-org's two pages; beta-org and gamma-org (selected repositories, listed in the mint's
    // answer) only have their count confirmed by a one-repository page.
    expect(listings.map((r) => r.query).sort((a, b) => `${a.per_page}/${a.page}`.localeCompare(`${b.per_page}/${b.page}`))).toEqual([
      { per_page: "1", page: "1" }, { per_page: "1", page: "1" }, { per_page: "100", page: "1" }, { per_page: "100", page: "2" },
    ]);
    expect(requestsTo("GET", /^\/app\/installations$/).map((r) => r.query)).toEqual([{ per_page: "100", page: "1" }]);
  });

  it("uses few round trips: one listing, then per installation a mint, its listing pages (or a count) and one query per 100 repositories", async () => {
    await getReleases(broker.url);
    const graphql = requestsTo("POST", /^\/graphql$/);
    expect(mints()).toHaveLength(3);
    expect(graphql).toHaveLength(2 + 1 + 1);
    expect(fx.sim.requests).toHaveLength(1 + 3 + 4 + 4);
    // Owners and names travel as variables, never inside the query text.
    for (const request of graphql) {
      const { query, variables } = request.body as { query: string; variables: Record<string, string> };
      expect(query).not.toMatch(/alpha-org|beta-org|gamma-org|svc-/);
      expect(query).toContain("releases(first:1,orderBy:{field:CREATED_AT,direction:DESC})");
      // One owner variable per query (one installation's repositories), one name variable each.
      expect(Object.keys(variables).filter((name) => name.startsWith("o"))).toEqual(["o0"]);
    }
    const alphaQueries = graphql.filter((r) => (r.body as { variables: Record<string, string> }).variables.o0 === "alpha-org");
    expect(alphaQueries.map((r) => Object.keys((r.body as { variables: object }).variables).length - 1).sort()).toEqual([100, 30]);
  });

  it("takes an installation's selected repositories from its mint answer: a one-repository page confirms the count, no listing is walked", async () => {
    const { body } = await getReleases(broker.url);
    expect(body.repos.filter((r: { repo: string }) => r.repo.startsWith("beta-org/")).map((r: { repo: string }) => r.repo)).toEqual(["beta-org/api", "beta-org/docs", "beta-org/web"]);
    expect(entry(body, "beta-org/api")!.latest).toMatchObject({ tag: "api-7" });
    const listed = requestsTo("GET", /^\/installation\/repositories$/).filter((r) => r.auth.kind === "installation" && r.auth.token === tokenOf(installations.beta));
    expect(listed.map((r) => [r.query, (r.response!.body as { total_count: number }).total_count])).toEqual([[{ per_page: "1", page: "1" }, 3]]);
  });

  it("walks the listing when the mint answer lists fewer repositories than the token reaches", async () => {
    // The platform's answer, shortened: one of beta-org's three repositories listed.
    const token = betaMintAnswers(["web"]);
    const { body } = await getReleases(broker.url);
    expect(body.truncated).toBe(false);
    expect(body.repos.filter((r: { repo: string }) => r.repo.startsWith("beta-org/")).map((r: { repo: string }) => r.repo)).toEqual(["beta-org/api", "beta-org/docs", "beta-org/web"]);
    expect(entry(body, "beta-org/api")!.latest).toMatchObject({ tag: "api-7" });
    const listed = requestsTo("GET", /^\/installation\/repositories$/).filter((r) => r.auth.kind === "installation" && r.auth.token === token);
    expect(listed.map((r) => r.query)).toEqual([{ per_page: "1", page: "1" }, { per_page: "100", page: "1" }]);
    expect(broker.logs.some((line) => line.includes("the mint's repositories are not all the token reaches") && line.includes('"minted":1') && line.includes('"listed":3'))).toBe(true);
    // Each repository looked up once, the one already queried from the mint's list included.
    const queried = requestsTo("POST", /^\/graphql$/).flatMap((r) => Object.values((r.body as { variables: Record<string, string> }).variables).filter((v) => ["web", "api", "docs"].includes(v)));
    expect(queried.sort()).toEqual(["api", "docs", "web"]);
  });

  it("an installation whose repository count fails is skipped like one whose listing fails", async () => {
    const token = betaMintAnswers(["web", "api", "docs"]);
    fx.sim.tokens.get(token)!.revoked = true; // every call made with it is refused (401)
    const { status, body } = await getReleases(broker.url);
    expect(status).toBe(200);
    expect(body.truncated).toBe(true);
    expect(body.repos.some((r: { repo: string }) => r.repo.startsWith("beta-org/"))).toBe(false);
    expect(body.repos).toHaveLength(132);
    const warning = broker.logs.find((line) => line.includes("repositories not counted"));
    expect(warning).toContain(String(installations.beta));
    expect(warning).toContain("upstream status 401");
  });

  it("mints read-only tokens over whole installations, cut to what each installation holds", async () => {
    await getReleases(broker.url);
    const byInstallation = Object.fromEntries(mints().map((m) => [m.path.split("/")[3], m.body]));
    expect(byInstallation[String(installations.alpha)]).toEqual({ permissions: { contents: "read", metadata: "read" } });
    expect(byInstallation[String(installations.beta)]).toEqual({ permissions: { contents: "read", metadata: "read" } });
    expect(byInstallation[String(installations.gamma)]).toEqual({ permissions: { metadata: "read" } });
    for (const mint of mints()) expect(mint.auth).toEqual({ kind: "app", appId: String(fx.app.id) });
  });

  it("reports repositories whose lookup fails with latest: null and logs them, keeping the rest", async () => {
    fx.sim.releases.failLookups("alpha-org/svc-000");
    try {
      const { status, body } = await getReleases(broker.url);
      expect(status).toBe(200);
      expect(body.truncated).toBe(false);
      expect(entry(body, "alpha-org/svc-000")).toEqual({ repo: "alpha-org/svc-000", latest: null });
      expect(entry(body, "alpha-org/svc-001")!.latest).toMatchObject({ tag: "v2.1.0" });
      // gamma-org's token has no contents permission: the platform refuses its releases.
      expect(entry(body, "gamma-org/site")).toEqual({ repo: "gamma-org/site", latest: null });
      const warnings = broker.logs.filter((line) => line.includes("latest release unknown"));
      expect(warnings.some((line) => line.includes("alpha-org/svc-000") && line.includes("INTERNAL"))).toBe(true);
      expect(warnings.some((line) => line.includes("gamma-org/site") && line.includes("FORBIDDEN"))).toBe(true);
    } finally {
      fx.sim.releases.failLookups("alpha-org/svc-000", false);
    }
  });

  it("reports every repository of a failed batch query with latest: null", async () => {
    fx.sim.faults.add({ method: "POST", path: "/graphql", respond: { status: 502, body: { message: "Server Error" } } });
    const { status, body } = await getReleases(broker.url);
    expect(status).toBe(200);
    expect(body.repos).toHaveLength(135);
    expect(body.repos.every((r: { latest: unknown }) => r.latest === null)).toBe(true);
    expect(body.truncated).toBe(false);
    expect(broker.logs.some((line) => line.includes("request failed: status 502"))).toBe(true);
  });

  it("reports latest: null for a chunk whose GraphQL answer is not JSON, and logs it as a malformed answer", async () => {
    fx.sim.faults.add({ method: "POST", path: "/graphql", times: 1, respond: "garbage" });
    const { status, body } = await getReleases(broker.url);
    expect(status).toBe(200);
    expect(body.repos).toHaveLength(135);
    expect(body.truncated).toBe(false);
    // One chunk of the four lost its answers; the others stand.
    expect(body.repos.filter((r: { latest: unknown }) => r.latest === null).length).toBeGreaterThanOrEqual(2);
    expect(body.repos.some((r: { latest: unknown }) => r.latest !== null)).toBe(true);
    expect(broker.logs.some((line) => line.includes("latest release unknown") && line.includes("malformed answer"))).toBe(true);
  });

  it("keeps the aggregate when one installation fails: its repositories are absent, truncated says the list is incomplete", async () => {
    fx.sim.faults.add({ method: "POST", path: `/app/installations/${installations.beta}/access_tokens`, respond: { status: 500, body: { message: "Server Error" } } });
    const { status, body } = await getReleases(broker.url);
    expect(status).toBe(200);
    expect(body.truncated).toBe(true);
    expect(body.repos.some((r: { repo: string }) => r.repo.startsWith("beta-org/"))).toBe(false);
    expect(body.repos).toHaveLength(132);
    expect(entry(body, "alpha-org/svc-000")!.latest).toMatchObject({ tag: "v1.1.0-rc.1" });
    const warning = broker.logs.find((line) => line.includes("installation skipped"));
    expect(warning).toContain(String(installations.beta));
    expect(warning).toContain("installation_token_failed");
  });

  // The streamed reads (server/github/streamed-json.ts) fail like the buffered ones did.
  it("skips an installation whose mint answer is not JSON (read as it arrives), like one whose mint fails", async () => {
    fx.sim.faults.add({ method: "POST", path: `/app/installations/${installations.beta}/access_tokens`, times: 1, respond: "garbage" });
    const { status, body } = await getReleases(broker.url);
    expect(status).toBe(200);
    expect(body.truncated).toBe(true);
    expect(body.repos.some((r: { repo: string }) => r.repo.startsWith("beta-org/"))).toBe(false);
    expect(body.repos).toHaveLength(132);
    const warning = broker.logs.find((line) => line.includes("installation skipped, no token"));
    expect(warning).toContain(String(installations.beta));
    expect(warning).toContain("installation_token_failed");
  });

  it("skips installations whose listing pages are not JSON (read as they arrive), like failed listings", async () => {
    // Every listing answer is garbage: alpha-org's pages, and the count pages of beta-org and gamma-org.
    fx.sim.faults.add({ method: "GET", path: "/installation/repositories", respond: "garbage" });
    const { status, body } = await getReleases(broker.url);
    expect(status).toBe(200);
    expect(body.truncated).toBe(true);
    expect(body.repos).toEqual([]);
    expect(broker.logs.find((line) => line.includes("repositories not listed"))).toContain(String(installations.alpha));
    expect(broker.logs.find((line) => line.includes("repositories not counted") && line.includes(String(installations.beta)))).toBeDefined();
  });

  it("skips a suspended installation without minting for it (its repositories are not reachable)", async () => {
    const jwt = await new SignJWT({}).setProtectedHeader({ alg: "RS256" }).setIssuer(String(fx.app.id)).setIssuedAt().setExpirationTime("5m")
      .sign(createPrivateKey(fx.app.privateKeyPem));
    const listing = (await (await fetch(`${fx.sim.apiBase}/app/installations?per_page=100`, { headers: { authorization: `Bearer ${jwt}` } })).json()) as Array<Record<string, unknown>>;
    const suspended = listing.map((inst) => (inst.id === installations.gamma ? { ...inst, suspended_at: "2026-01-01T00:00:00Z", suspended_by: { login: "admin" } } : inst));
    fx.sim.faults.add({ method: "GET", path: "/app/installations", times: 1, respond: { status: 200, body: suspended } });
    fx.sim.clearRequests();
    const { body } = await getReleases(broker.url);
    expect(body.truncated).toBe(false);
    expect(body.repos).toHaveLength(133);
    expect(body.repos.some((r: { repo: string }) => r.repo.startsWith("gamma-org/"))).toBe(false);
    expect(mints().map((m) => m.path)).not.toContain(`/app/installations/${installations.gamma}/access_tokens`);
  });
});

describe("GET /releases caps", () => {
  it("RELEASES_MAX_INSTALLATIONS: stops at the cap, mints nothing beyond it, says truncated", async () => {
    broker.env.RELEASES_MAX_INSTALLATIONS = "2";
    const { body } = await getReleases(broker.url);
    expect(body.truncated).toBe(true);
    expect(body.repos).toHaveLength(133);
    expect(body.repos.some((r: { repo: string }) => r.repo.startsWith("gamma-org/"))).toBe(false);
    expect(mints().map((m) => m.path)).not.toContain(`/app/installations/${installations.gamma}/access_tokens`);
    expect(mints()).toHaveLength(2);
  });

  it("RELEASES_MAX_REPOSITORIES: keeps the first repositories in installation order, says truncated", async () => {
    broker.env.RELEASES_MAX_REPOSITORIES = "131";
    const { body } = await getReleases(broker.url);
    expect(body.truncated).toBe(true);
    expect(body.repos).toHaveLength(131);
    expect(body.repos.filter((r: { repo: string }) => r.repo.startsWith("alpha-org/"))).toHaveLength(130);
    expect(body.repos.filter((r: { repo: string }) => r.repo.startsWith("beta-org/")).map((r: { repo: string }) => r.repo)).toEqual(["beta-org/web"]);
  });

  it("a repository cap inside the first installation stops its listing early", async () => {
    broker.env.RELEASES_MAX_REPOSITORIES = "40";
    const { body } = await getReleases(broker.url);
    expect(body.truncated).toBe(true);
    expect(body.repos.map((r: { repo: string }) => r.repo)).toEqual(names("svc", 40).map((n) => `alpha-org/${n}`));
    // 41 repositories prove the cut; page 2 of alpha-org's listing is never asked for.
    expect(requestsTo("GET", /^\/installation\/repositories$/).filter((r) => r.query.page === "2")).toHaveLength(0);
  });

  it("caps exactly at the fleet's size are reached but cut nothing: truncated is false", async () => {
    broker.env.RELEASES_MAX_INSTALLATIONS = "3";
    broker.env.RELEASES_MAX_REPOSITORIES = "135";
    const { body } = await getReleases(broker.url);
    expect(body.repos).toHaveLength(135);
    expect(body.truncated).toBe(false);
  });
});

describe("GET /releases across installation pages", () => {
  // A second App on the file's simulator (not a simulator of its own), installed on 101 accounts:
  // its installation listing has two pages, and holds nothing of the first App's fleet.
  let second: { id: number; privateKeyPem: string };
  let bigBroker: TestBroker;
  beforeAll(() => {
    second = fx.sim.createApp({ id: randomInt(2_000_000, 900_000_000) });
    secrets.push(second.privateKeyPem);
    for (let i = 0; i < 101; i += 1) fx.sim.addInstallation({ appId: second.id, account: `org-${String(i).padStart(3, "0")}`, permissions: { ...READ_WRITE }, repositories: ["only"] });
    fx.sim.releases.add("org-100/only", { tagName: "v100" });
  });
  afterAll(async () => {
    allLogs.push(...bigBroker.logs);
    await bigBroker.close();
  });

  it("walks the installation listing's pages and stops at the default cap of 100", async () => {
    const refusedBefore = fx.sim.limits.refused.points;
    bigBroker = await startBroker({ ...fx.env, HOST_APP_ID: String(second.id), HOST_APP_PRIVATE_KEY: second.privateKeyPem });
    const { body } = await getReleases(bigBroker.url);
    expect(body.repos).toHaveLength(100);
    expect(body.truncated).toBe(true);
    // A full first page with a rel="next" link is proof enough that the cap cut something.
    expect(fx.sim.requests.filter((r) => r.path === "/app/installations").map((r) => r.query.page)).toEqual(["1"]);

    fx.sim.clearRequests();
    // Within GitHub's points budget without waiting a minute: the second crawl reuses the first
    // one's 100 tokens and mints only for the 101st installation.
    bigBroker.env.RELEASES_MAX_INSTALLATIONS = "101";
    const all = await getReleases(bigBroker.url);
    expect(all.body.repos).toHaveLength(101);
    expect(all.body.truncated).toBe(false);
    expect(all.body.repos.at(-1)).toMatchObject({ repo: "org-100/only", latest: { tag: "v100" } });
    expect(fx.sim.requests.filter((r) => r.path === "/app/installations").map((r) => r.query.page)).toEqual(["1", "2"]);
    expect(fx.sim.requests.filter((r) => r.path.endsWith("/access_tokens"))).toHaveLength(1);
    expect(fx.sim.limits.refused.points - refusedBefore).toBe(0);
  });
});

describe("the answer's serialisation (the repositories' part memoised per aggregate)", () => {
  it("writes exactly what JSON.stringify writes, first and from the memo, whatever the text holds", () => {
    const repos = [
      { repo: "acme/widgets", latest: { tag: "v1.0.0", name: 'quote " backslash \\ line\n', published_at: "2026-01-01T00:00:00Z", url: "https://example.test/u\u2028" } },
      { repo: "acme/ünïcode-😀", latest: null },
    ];
    for (const cached of [false, true, true]) {
      const answer = { generated_at: "2026-11-23T00:00:00.000Z", repos, truncated: cached, cached };
      expect(releasesJson(answer as never)).toBe(JSON.stringify(answer));
    }
  });
});
