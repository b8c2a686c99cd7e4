// Listing pages fetched concurrently over HTTP: once page 1 of a listing shows how many pages there
// are, pages 2…n are asked for at once (bounded), each once, in an order-independent way; the
// repository cap stops the listing before pages it cannot use. The broker runs in process with a
// fetch that counts the listing requests in flight on their way to the loopback simulator.
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { createApp, type BrokerApp } from "../server/app.js";
import { serve } from "../server/http/serve.js";
import { Writable } from "node:stream";
import { createLogger } from "../server/log.js";
import { lastPage, PAGE_CONCURRENCY } from "../server/releases/collect-pages.js";
import { INSTALLATION_CONCURRENCY } from "../server/releases/crawl-releases.js";
import { loopbackOnlyUpstreamFetch, TEST_TIMING } from "./support/broker.js";
import { expectNoSecrets } from "./support/fixtures.js";
import { keepLogs } from "./support/log-sink.js";
import { getReleases, releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";

let fx: ReleasesFixture;
const POINTS_WINDOW_MS = 2_000;
/** `prefix-0000`, …: four digits, so name order is creation order. */
const names4 = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(4, "0")}`);
const BIG = names4("svc", 550); // 6 pages of 100
const SMALL = names4("lib", 250); // 3 pages

beforeAll(async () => {
  fx = await releasesFixture({ latencyMs: 5 });
  // GitHub's 900 REST points per App on both sides (the broker's default): one crawl of these 222
  // installations mints 222 tokens, 1,113 of the App's points with the listing, so the broker
  // paces the last mints into the next window. GitHub's window is a minute; here it is scaled
  // down to POINTS_WINDOW_MS on both sides (simulator and broker), so that takes seconds.
  fx.sim.limits.values.pointsWindowMs = POINTS_WINDOW_MS;
  // On all of their repositories: the mint answer lists none, so the crawl walks the listings.
  fx.install("big-org", BIG, undefined, "all");
  fx.install("small-org", SMALL, undefined, "all");
  // Installations on 3 pages of the App's own listing.
  for (let i = 0; i < 220; i += 1) fx.install(`tiny-${String(i).padStart(3, "0")}`, ["only"]);
  fx.sim.releases.add("big-org/svc-0549", { tagName: "last-page" });
  fx.sim.releases.add("small-org/lib-0000", { tagName: "first-page" });
});
const allLogs: string[] = [];
afterAll(async () => {
  await fx.sim.close();
  keepLogs(allLogs);
  expectNoSecrets(allLogs, [fx.app.privateKeyPem, TRIGGER_SECRET, ...fx.sim.tokens.keys()]);
});

/** Listing requests in flight, per path, and the most seen at once. */
let inFlight: Record<string, number>;
let peak: Record<string, number>;
let broker: { url: string; app: BrokerApp; env: Record<string, string | undefined>; server: Server };

const LISTINGS = ["/installation/repositories", "/app/installations"];
/** GraphQL queries that set out while a repository listing page was still on its way. */
let queriesDuringListing: number;
const countingFetch: typeof fetch = async (input, init) => {
  const path = new URL(typeof input === "string" || input instanceof URL ? input : input.url).pathname;
  if (path === "/graphql" && (inFlight["/installation/repositories"] ?? 0) > 0) queriesDuringListing += 1;
  if (!LISTINGS.includes(path)) return loopbackOnlyUpstreamFetch(input, init);
  inFlight[path] = (inFlight[path] ?? 0) + 1;
  peak[path] = Math.max(peak[path] ?? 0, inFlight[path]!);
  try {
    const response = await loopbackOnlyUpstreamFetch(input, init);
    // The body too: a page is in flight until it has arrived.
    const body = await response.arrayBuffer();
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  } finally {
    inFlight[path]! -= 1;
  }
};

const listingPages = (path: string, token?: string) =>
  fx.sim.requests
    .filter((r) => r.method === "GET" && r.path === path && (token === undefined || r.headers.authorization === token))
    .map((r) => Number(r.query.page));
const repositoryListingsByToken = () => {
  const byToken = new Map<string, number[]>();
  for (const r of fx.sim.requests.filter((r) => r.path === "/installation/repositories")) {
    const token = String(r.headers.authorization);
    byToken.set(token, [...(byToken.get(token) ?? []), Number(r.query.page)]);
  }
  return [...byToken.values()].map((pages) => pages.sort((a, b) => a - b));
};

describe("listing pages 2…n fetched concurrently", () => {
  // A broker per test (its settings are the test's), for these tests only: lastPage's below need none.
  beforeEach(async () => {
    fx.sim.clearRequests();
    // Each test's broker starts with an empty points window: so does the simulator's.
    fx.sim.limits.forgetSpentPoints();
    inFlight = {};
    peak = {};
    queriesDuringListing = 0;
    const env: Record<string, string | undefined> = { ...fx.env, RELEASES_MAX_INSTALLATIONS: "1000", RELEASES_MAX_REPOSITORIES: "5000" };
    const app = createApp({
      env: () => env,
      fetch: countingFetch,
      logger: createLogger({
        level: "debug",
        destination: new Writable({
          write(chunk, _encoding, done) {
            allLogs.push(...String(chunk).split("\n").filter((line) => line !== ""));
            done();
          },
        }),
      }),
      // Counts pages: a generous timeout keeps a loaded machine from turning a slow page into a retry.
      timing: { ...TEST_TIMING, upstreamTimeoutMs: 30_000, pointsWindowMs: POINTS_WINDOW_MS },
      retry: { attempts: 3, baseDelayMs: 10, maxWaitMs: 2000 },
    });
    const server: Server = await new Promise((resolve) => {
      const listening = serve(app, 0, "127.0.0.1", () => resolve(listening));
    });
    broker = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, app, env, server };
  });
  afterEach(async () => {
    broker.server.closeAllConnections();
    await new Promise<void>((resolve) => broker.server.close(() => resolve()));
    await broker.app.close();
  });

  it("asks for every page once, several at a time within the bound, and keeps the answer complete and in order", async () => {
    const { status, body } = await getReleases(broker.url);
    expect(status).toBe(200);
    expect(body.truncated).toBe(false);
    expect(body.repos).toHaveLength(550 + 250 + 220);
    const repos = body.repos.map((r: { repo: string }) => r.repo);
    expect(repos.filter((r: string) => r.startsWith("big-org/"))).toEqual(BIG.map((n) => `big-org/${n}`));
    expect(body.repos.find((r: { repo: string }) => r.repo === "big-org/svc-0549").latest).toMatchObject({ tag: "last-page" });

    // Each listing's pages exactly once: 1…6, 1…3, and 1 for each tiny installation.
    const listings = repositoryListingsByToken().sort((a, b) => b.length - a.length);
    expect(listings[0]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(listings[1]).toEqual([1, 2, 3]);
    expect(listings.slice(2).every((pages) => pages.length === 1 && pages[0] === 1)).toBe(true);
    expect(listingPages("/app/installations").sort((a, b) => a - b)).toEqual([1, 2, 3]);

    // Concurrent, and bounded: page requests of one crawl never exceed the installations crawled
    // at once (each on its page 1) plus the shared page bound.
    expect(peak["/installation/repositories"]).toBeGreaterThan(1);
    expect(peak["/installation/repositories"]).toBeLessThanOrEqual(INSTALLATION_CONCURRENCY + PAGE_CONCURRENCY);
    expect(peak["/app/installations"]).toBe(2); // pages 2 and 3 together

    // Inside GitHub's points budget: more than a window's worth went out, and nothing was refused.
    expect(fx.sim.requests.filter((r) => r.path.endsWith("/access_tokens"))).toHaveLength(222);
    expect(fx.sim.limits.refused).toEqual({ concurrency: 0, points: 0, graphqlPoints: 0 });
  });

  // One crawl of big-org's 550 repositories for both (the same settings).
  it("a listing's pages 2…n are in flight together even when it is the only one; a page's repositories are looked up while later pages are still on their way, each repository once", async () => {
    broker.env.RELEASES_MAX_INSTALLATIONS = "1"; // big-org only
    const { body } = await getReleases(broker.url);
    expect(body.repos).toHaveLength(550);
    expect(listingPages("/installation/repositories").sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(peak["/installation/repositories"]).toBe(Math.min(PAGE_CONCURRENCY, 5)); // pages 2…6

    expect(queriesDuringListing).toBeGreaterThan(0);
    const queried = fx.sim.requests
      .filter((r) => r.path === "/graphql")
      .flatMap((r) => {
        const variables = (r.body as { variables: Record<string, string> }).variables;
        // One owner variable per query (o0: the installation's owner), one name variable each.
        return Object.keys(variables).filter((k) => k.startsWith("n")).map((k) => `${variables.o0}/${variables[k]}`);
      });
    expect(queried.sort()).toEqual(BIG.map((n) => `big-org/${n}`));
  });

  it("respects RELEASES_MAX_REPOSITORIES: no page beyond what the cap needs", async () => {
    broker.env.RELEASES_MAX_INSTALLATIONS = "1";
    broker.env.RELEASES_MAX_REPOSITORIES = "420";
    const { body } = await getReleases(broker.url);
    expect(body.truncated).toBe(true);
    expect(body.repos.map((r: { repo: string }) => r.repo)).toEqual(BIG.slice(0, 420).map((n) => `big-org/${n}`));
    // 421 repositories prove the cut: pages 1…5, nothing after.
    expect(listingPages("/installation/repositories").sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5]);
  });

  it.each([
    ["499", 5],
    ["500", 6], // page 6 only for the one repository that proves the cut
  ])("a cap of %s on a page boundary asks for pages 1…%i", async (cap, pages) => {
    broker.env.RELEASES_MAX_INSTALLATIONS = "1";
    broker.env.RELEASES_MAX_REPOSITORIES = cap;
    const { body } = await getReleases(broker.url);
    expect(body.truncated).toBe(true);
    expect(body.repos).toHaveLength(Number(cap));
    expect(listingPages("/installation/repositories").sort((a, b) => a - b)).toEqual(Array.from({ length: pages }, (_, i) => i + 1));
  });
});

describe("lastPage: how many pages a Link header announces", () => {
  it.each([
    ['<https://api.github.com/installation/repositories?per_page=100&page=2>; rel="next", <https://api.github.com/installation/repositories?per_page=100&page=50>; rel="last"', 50],
    ['<https://h/x?page=1&per_page=100>; rel="prev", <https://h/x?per_page=100&page=3>; rel="last", <https://h/x?page=1>; rel="first"', 3],
    ['<https://h/x?per_page=100&page=2>; rel="next"', undefined], // no last: walk one page after another
    ['<https://h/x?per_page=100&page=0>; rel="last"', undefined],
    ['<https://h/x?per_page=100&page=two>; rel="last"', undefined],
    ['<not a url>; rel="last"', undefined],
    ["", undefined],
    [undefined, undefined],
  ])("%s → %s", (link, expected) => {
    expect(lastPage(link)).toBe(expected);
  });
});
