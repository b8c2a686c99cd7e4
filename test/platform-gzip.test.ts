// Compression on the wire (issue 28): every platform request asks for gzip, the simulator answers
// JSON gzip-compressed as GitHub does, and the broker reads it. Over HTTP, through the broker, to
// the loopback simulator: a 5,000-repository crawl, each kind of installation, in bytes on the wire.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { jsonChunks } from "../simulator/json-text.js";
import { startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { getReleases, names, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";

const REPOSITORIES = names("repo", 5000);
let fx: ReleasesFixture;
let broker: TestBroker;
const allLogs: string[] = [];

beforeAll(async () => {
  fx = await releasesFixture();
  // One account's 5,000 repositories for both kinds of installation (one after the other): the
  // simulator builds GitHub's repository object and its JSON once per repository, not twice.
  fx.sim.releases.add("fleet-org/repo-000", { tagName: "v0", createdAt: "2026-01-01T00:00:00Z" });
  fx.sim.releases.add("fleet-org/repo-4999", { tagName: "v4999", createdAt: "2026-01-01T00:00:00Z" });
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(allLogs, [fx.app.privateKeyPem, TRIGGER_SECRET, ...fx.sim.tokens.keys()]);
});
beforeEach(async () => {
  fx.sim.clearRequests();
  fx.sim.faults.clear();
  // A 5,000-repository answer is 23 MB of JSON for the simulator to write and gzip: on a loaded
  // machine that can pass the tests' 2 s upstream timeout, and this file is about bytes, not time.
  broker = await startBroker({ ...fx.env, RELEASES_MAX_REPOSITORIES: String(REPOSITORIES.length) }, { timing: { upstreamTimeoutMs: 20_000 } });
});
afterEach(async () => {
  allLogs.push(...broker.logs);
  await broker.close();
});

/**
 * The JSON text of every answer, as it would have gone without compression, in bytes: JSON.stringify's
 * (the simulator's jsonChunks are exactly its bytes, test/simulator-json-text.test.ts), with the
 * bytes of each repository object it already keeps rather than 23 MB written out again.
 */
const plainBytes = () =>
  fx.sim.requests.reduce((sum, r) => sum + (r.response?.body === undefined ? 0 : (jsonChunks(r.response.body) ?? []).reduce((bytes, chunk) => bytes + Buffer.byteLength(chunk), 0)), 0);

describe("gzip on the platform's wire", () => {
  it.each([
    ["selected", "fleet-org", "repo-000", "v0"],
    ["all", "fleet-org", "repo-4999", "v4999"],
  ] as Array<["selected" | "all", string, string, string]>)("a fresh crawl of 5,000 repositories (installation on %s) asks gzip everywhere and takes ≤ 1.5 MB on the wire", async (selection, account, repo, tag) => {
    const installation = fx.install(account, REPOSITORIES, { contents: "read", metadata: "read" }, selection);
    try {
      const before = fx.sim.wireBytes;
      const { status, body } = await getReleases(broker.url);
      const wire = fx.sim.wireBytes - before;
      expect(status).toBe(200);
      expect(body.truncated).toBe(false);
      expect(body.repos).toHaveLength(5000);
      expect(body.repos.find((r: { repo: string }) => r.repo === `${account}/${repo}`)).toMatchObject({ latest: { tag } });
      const platform = fx.sim.requests;
      expect(platform.length).toBeGreaterThan(3);
      for (const request of platform) {
        expect(request.headers["accept-encoding"]).toBe("gzip");
        expect(request.response?.headers["content-encoding"]).toBe("gzip");
      }
      expect(platform.some((r) => r.path === "/graphql")).toBe(true);
      // Some 23 MB of JSON (GitHub's full repository object, 5,000 times) in under 1.5 MB (issue 28's target).
      expect(plainBytes()).toBeGreaterThan(20_000_000);
      expect(wire).toBeLessThanOrEqual(1_500_000);
      expect(wire).toBe(platform.reduce((sum, r) => sum + r.response!.wireBytes, 0));
    } finally {
      fx.sim.removeInstallation(installation);
    }
  });

  it("a listing page whose gzip stream is cut short is retried as a cut connection is, and the crawl completes", async () => {
    const installation = fx.install("cut-org", REPOSITORIES.slice(0, 300), { contents: "read", metadata: "read" }, "all");
    try {
      fx.sim.faults.add({ method: "GET", path: "/installation/repositories", times: 1, respond: "truncated-gzip" });
      const { status, body } = await getReleases(broker.url);
      expect(status).toBe(200);
      expect(body.truncated).toBe(false);
      expect(body.repos).toHaveLength(300);
      const pages = fx.sim.requests.filter((r) => r.path === "/installation/repositories").map((r) => `${r.query.per_page}/${r.query.page ?? "1"}`);
      expect(pages.length).toBe(new Set(pages).size + 1); // one page asked twice: the cut one
    } finally {
      fx.sim.removeInstallation(installation);
    }
  });

  it("a listing whose every answer is cut short skips the installation, as failed listings are", async () => {
    const installation = fx.install("cut-org", REPOSITORIES.slice(0, 300), { contents: "read", metadata: "read" }, "all");
    try {
      fx.sim.faults.add({ method: "GET", path: "/installation/repositories", respond: "truncated-gzip" });
      const { status, body } = await getReleases(broker.url);
      expect(status).toBe(200);
      expect(body.truncated).toBe(true);
      expect(body.repos).toEqual([]);
      expect(broker.logs.find((line) => line.includes("repositories not listed"))).toContain(String(installation));
    } finally {
      fx.sim.removeInstallation(installation);
    }
  });
});
