// The simulator's release fields: the /releases tests trust them to behave like GitHub's.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createSimulator, type Simulator } from "../simulator/index.js";

let sim: Simulator;
let installationId: number;

beforeAll(async () => {
  sim = await createSimulator();
  const app = sim.createApp();
  installationId = sim.addInstallation({ appId: app.id, account: "rel-org", permissions: { contents: "read", metadata: "read" }, repositories: ["lib", "empty"] });
  sim.releases.add("rel-org/lib", { tagName: "v1", createdAt: "2026-01-01T00:00:00Z" });
  sim.releases.add("rel-org/lib", { tagName: "v2", name: "Two", createdAt: "2026-02-01T00:00:00Z" });
  sim.releases.add("rel-org/lib", { tagName: "v3-rc", isPrerelease: true, createdAt: "2026-03-01T00:00:00Z" });
  sim.releases.add("rel-org/lib", { tagName: "v3", isDraft: true, createdAt: "2026-04-01T00:00:00Z" });
});
afterAll(async () => {
  await sim.close();
});

async function gql(query: string, token: string) {
  const res = await fetch(sim.graphqlUrl, { method: "POST", headers: { authorization: `token ${token}`, "content-type": "application/json" }, body: JSON.stringify({ query }) });
  return (await res.json()) as { data?: any; errors?: Array<Record<string, unknown>> };
}

const FIELDS = "tagName name isDraft isPrerelease isLatest publishedAt createdAt url";

describe("simulated releases", () => {
  it("latestRelease is the newest release that is neither a draft nor a prerelease", async () => {
    const { data } = await gql(`{ repository(owner: "rel-org", name: "lib") { latestRelease { ${FIELDS} } } }`, sim.issueToken(installationId));
    expect(data.repository.latestRelease).toEqual({
      tagName: "v2", name: "Two", isDraft: false, isPrerelease: false, isLatest: true,
      publishedAt: "2026-02-01T00:00:00Z", createdAt: "2026-02-01T00:00:00Z", url: "https://github.com/rel-org/lib/releases/tag/v2",
    });
  });

  it("releases(orderBy CREATED_AT DESC) lists drafts and prereleases too; a draft is unpublished", async () => {
    const { data } = await gql(`{ repository(owner: "rel-org", name: "lib") { releases(first: 10, orderBy: {field: CREATED_AT, direction: DESC}) { totalCount nodes { tagName isDraft publishedAt url } pageInfo { hasNextPage } } } }`, sim.issueToken(installationId));
    const connection = data.repository.releases;
    expect(connection.totalCount).toBe(4);
    expect(connection.nodes.map((n: { tagName: string }) => n.tagName)).toEqual(["v3", "v3-rc", "v2", "v1"]);
    expect(connection.nodes[0]).toMatchObject({ isDraft: true, publishedAt: null });
    expect(connection.nodes[0].url).toMatch(/\/releases\/tag\/untagged-/);
    expect(connection.pageInfo.hasNextPage).toBe(false);
  });

  it("without orderBy lists oldest first; first/last cut the list", async () => {
    const token = sim.issueToken(installationId);
    const first = await gql(`{ repository(owner: "rel-org", name: "lib") { releases(first: 2) { nodes { tagName } pageInfo { hasNextPage } } } }`, token);
    expect(first.data.repository.releases).toEqual({ nodes: [{ tagName: "v1" }, { tagName: "v2" }], pageInfo: { hasNextPage: true } });
    const last = await gql(`{ repository(owner: "rel-org", name: "lib") { releases(last: 1) { nodes { tagName } } } }`, token);
    expect(last.data.repository.releases.nodes).toEqual([{ tagName: "v3" }]);
  });

  it("a repository without releases has an empty connection and no latestRelease", async () => {
    const { data } = await gql(`{ repository(owner: "rel-org", name: "empty") { latestRelease { tagName } releases(first: 1) { totalCount nodes { tagName } } } }`, sim.issueToken(installationId));
    expect(data.repository).toEqual({ latestRelease: null, releases: { totalCount: 0, nodes: [] } });
  });

  it("wants first or last, at most 100, like GitHub", async () => {
    const token = sim.issueToken(installationId);
    const none = await gql(`{ repository(owner: "rel-org", name: "lib") { releases { totalCount } } }`, token);
    expect(none.errors?.[0]).toMatchObject({ type: "MISSING_PAGINATION_BOUNDARIES" });
    const many = await gql(`{ repository(owner: "rel-org", name: "lib") { releases(first: 101) { totalCount } } }`, token);
    expect(many.errors?.[0]).toMatchObject({ type: "EXCESSIVE_PAGINATION" });
  });

  it("hides releases from a token without contents permission", async () => {
    const res = await gql(`{ repository(owner: "rel-org", name: "lib") { latestRelease { tagName } } }`, sim.issueToken(installationId, { permissions: { metadata: "read" } }));
    expect(res.errors?.[0]).toMatchObject({ type: "FORBIDDEN", message: "Resource not accessible by integration", path: ["repository", "latestRelease"] });
  });

  it("fails lookups of a repository on demand, and recovers", async () => {
    sim.releases.failLookups("rel-org/lib");
    const failing = await gql(`{ repository(owner: "rel-org", name: "lib") { latestRelease { tagName } } }`, sim.issueToken(installationId));
    expect(failing.errors?.[0]).toMatchObject({ type: "INTERNAL" });
    sim.releases.failLookups("rel-org/lib", false);
    const ok = await gql(`{ repository(owner: "rel-org", name: "lib") { latestRelease { tagName } } }`, sim.issueToken(installationId));
    expect(ok.data.repository.latestRelease).toEqual({ tagName: "v2" });
  });
});

describe("simulated repository listing (GET /installation/repositories)", () => {
  async function listAll(token: string): Promise<{ names: string[]; totals: number[]; pages: number }> {
    const names: string[] = [];
    const totals: number[] = [];
    let url: string | undefined = `${sim.apiBase}/installation/repositories?per_page=100`;
    let pages = 0;
    while (url) {
      const res = await fetch(url, { headers: { authorization: `token ${token}` } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { total_count: number; repositories: Array<{ full_name: string }> };
      names.push(...body.repositories.map((r) => r.full_name));
      totals.push(body.total_count);
      pages += 1;
      url = /<([^>]*)>;\s*rel="next"/.exec(res.headers.get("link") ?? "")?.[1];
    }
    return { names, totals, pages };
  }

  it("pages a large selection in its order, once each, with the same total on every page", async () => {
    const app = sim.createApp();
    const selection = Array.from({ length: 1234 }, (_, i) => `big-${String(i).padStart(4, "0")}`).reverse();
    const id = sim.addInstallation({ appId: app.id, account: "list-org", permissions: { metadata: "read" }, repositories: selection });
    // A token narrowed to names, as a mint without `repositories` over a selection gives: the
    // installation's own list, plus names it does not hold (ignored) and differently cased ones.
    const token = sim.issueToken(id, { repositories: [...selection, "not-installed", "list-org/big-0001", "BIG-0002"] });
    const listed = await listAll(token);
    expect(listed.pages).toBe(13);
    expect(listed.names).toEqual([...selection.map((n) => `list-org/${n}`), "list-org/big-0002"]);
    expect(new Set(listed.totals)).toEqual(new Set([1235]));
  });

  it("an installation on all repositories lists what a narrowed token names, bare names only", async () => {
    const app = sim.createApp();
    const id = sim.addInstallation({ appId: app.id, account: "all-org", permissions: { metadata: "read" }, repositories: "all" });
    const token = sim.issueToken(id, { repositories: ["one", "all-org/two", "Three"] });
    expect((await listAll(token)).names).toEqual(["all-org/one", "all-org/Three"]);
  });
});
