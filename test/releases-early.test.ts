// GET /releases over an installation on selected repositories, whose mint answer lists them all
// (1,000 here, some 5 MB): the crawl looks up each hundred as soon as it has arrived, with the
// token from the answer's first bytes, and keeps those lookups only if the finished answer
// confirms that token. Over HTTP, through the broker, to the loopback simulator.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { repositoryJson } from "../simulator/github-state.js";
import { startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { getReleases, names, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";

const REPOSITORIES = names("repo", 1000);
let fx: ReleasesFixture;
let broker: TestBroker;
let installation = 0;
const allLogs: string[] = [];

beforeAll(async () => {
  fx = await releasesFixture();
  installation = fx.install("big-org", REPOSITORIES, { contents: "read", metadata: "read" });
  fx.sim.releases.add("big-org/repo-000", { tagName: "v0", createdAt: "2026-01-01T00:00:00Z" });
  fx.sim.releases.add("big-org/repo-999", { tagName: "v999", createdAt: "2026-01-01T00:00:00Z" });
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(allLogs, [fx.app.privateKeyPem, TRIGGER_SECRET, ...fx.sim.tokens.keys()]);
});
beforeEach(() => {
  fx.sim.clearRequests();
  fx.sim.faults.clear();
});
afterEach(async () => {
  allLogs.push(...broker.logs);
  await broker.close();
});

const graphqlRequests = () => fx.sim.requests.filter((r) => r.method === "POST" && r.path === "/graphql");
/** Each repository name the GraphQL queries asked about, with the token that asked. */
const queried = () =>
  graphqlRequests().flatMap((r) => {
    const variables = (r.body as { variables: Record<string, string> }).variables;
    const token = String(r.headers.authorization).replace(/^(Bearer|token) /i, "");
    return Object.entries(variables)
      .filter(([name]) => name.startsWith("n"))
      .map(([, value]) => ({ name: value, token }));
  });
/** GET /releases answers all 1,000 repositories, with the releases the platform holds. */
async function expectWholeAggregate() {
  const { status, body } = await getReleases(broker.url);
  expect(status).toBe(200);
  expect(body.truncated).toBe(false);
  expect(body.repos).toHaveLength(1000);
  expect(body.repos[0]).toMatchObject({ repo: "big-org/repo-000", latest: { tag: "v0" } });
  expect(body.repos[999]).toMatchObject({ repo: "big-org/repo-999", latest: { tag: "v999" } });
  expect(body.repos[1]).toEqual({ repo: "big-org/repo-001", latest: null });
}
const countRequest = () => fx.sim.requests.findIndex((r) => r.path === "/installation/repositories" && r.query.per_page === "1");

describe("GET /releases: lookups while the mint answer arrives", () => {
  it("starts lookups before the answer is all in, and looks each repository up once", async () => {
    broker = await startBroker({ ...fx.env });
    await expectWholeAggregate();
    // The count is asked once the mint answer is in; queries went out before it.
    const firstQuery = fx.sim.requests.findIndex((r) => r.method === "POST" && r.path === "/graphql");
    expect(countRequest()).toBeGreaterThan(firstQuery);
    expect(firstQuery).toBeGreaterThan(-1);
    const names = queried().map((q) => q.name);
    expect(names).toHaveLength(1000);
    expect(new Set(names).size).toBe(1000);
    expect(graphqlRequests()).toHaveLength(10);
    expect(broker.logs.some((line) => line.includes("latest release unknown"))).toBe(false);
  });

  it("drops lookups made with a token the finished answer does not confirm, and looks up again", async () => {
    broker = await startBroker({ ...fx.env });
    // The platform's answer written by hand: a token first, then the list, then the real token.
    // JSON.parse keeps the last member of a name, so the mint's token is the real one.
    const token = fx.sim.issueToken(installation, { permissions: { contents: "read", metadata: "read" }, repositories: REPOSITORIES });
    const repositories = REPOSITORIES.map((name) => repositoryJson(fx.sim.repository("big-org", name), { apiBase: fx.sim.apiBase, url: fx.sim.url }));
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");
    const text = `{"token":"ghs_not_the_token","expires_at":"${expiresAt}","permissions":{"contents":"read","metadata":"read"},"repository_selection":"selected","repositories":${JSON.stringify(repositories)},"token":"${token}"}`;
    fx.sim.faults.add({ method: "POST", path: `/app/installations/${installation}/access_tokens`, times: 1, respond: { status: 201, headers: { "content-type": "application/json; charset=utf-8" }, body: text } });
    await expectWholeAggregate();
    // Early queries went out with the first token (refused), then every repository once with the real one.
    const byToken = (t: string) => queried().filter((q) => q.token === t).map((q) => q.name);
    expect(byToken("ghs_not_the_token").length).toBeGreaterThan(0);
    expect(byToken(token).sort()).toEqual([...REPOSITORIES].sort());
    // The dropped lookups' failures are not reported as unknown releases.
    expect(broker.logs.some((line) => line.includes("latest release unknown"))).toBe(false);
  });

  it("stops early lookups when the list outgrows the cap: the listing decides, nothing is looked up twice", async () => {
    broker = await startBroker({ ...fx.env, RELEASES_MAX_REPOSITORIES: "150" });
    const { status, body } = await getReleases(broker.url);
    expect(status).toBe(200);
    expect(body.truncated).toBe(true);
    expect(body.repos).toHaveLength(150);
    expect(body.repos[0]).toMatchObject({ repo: "big-org/repo-000", latest: { tag: "v0" } });
    const names = queried().map((q) => q.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeLessThanOrEqual(200);
    expect(fx.sim.requests.some((r) => r.path === "/installation/repositories" && r.query.per_page === "100")).toBe(true);
  });
});
