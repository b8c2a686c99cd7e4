// A repository listing's pages 2…n start as soon as page 1's headers are in (its Link header says
// how many there are), before page 1's body: over HTTP against a hand-written server that holds
// page 1's body back, through the lean platform client and listRepositories.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { createServer, type ServerResponse, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createPlatformClient } from "../server/github/platform-client.js";
import { listRepositories } from "../server/releases/list-repositories.js";
import { upstreamFetch } from "../server/upstream-fetch.js";

const PAGES = 4;
const HOLD_MS = 400;
let server: Server;
let apiBase: string;
/** What the server saw, in order: "request N", "body N sent". */
let events: string[] = [];
/** Page 1's answer: its items and Link (a test may make it empty). */
let firstPage: { count: number; link: (base: string) => string } = { count: 100, link: (base) => linkFor(base, 1) };

const repository = (i: number) => ({ id: i, name: `r${i}`, full_name: `o/r${i}`, owner: { id: 1, login: "o" }, private: false });
function linkFor(base: string, page: number): string {
  const url = (p: number) => `<${base}/installation/repositories?per_page=100&page=${p}>`;
  const parts = [];
  if (page < PAGES) parts.push(`${url(page + 1)}; rel="next"`, `${url(PAGES)}; rel="last"`);
  if (page > 1) parts.push(`${url(1)}; rel="first"`, `${url(page - 1)}; rel="prev"`);
  return parts.join(", ");
}
function answer(res: ServerResponse, page: number, count: number, link: string, holdMs: number) {
  res.writeHead(200, { "content-type": "application/json; charset=utf-8", link });
  res.flushHeaders();
  const items = Array.from({ length: count }, (_, i) => repository((page - 1) * 100 + i));
  setTimeout(() => {
    res.end(JSON.stringify({ total_count: PAGES * 100, repository_selection: "all", repositories: items }));
    events.push(`body ${page} sent`);
  }, holdMs);
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const page = Number(new URL(req.url!, "http://x").searchParams.get("page"));
    events.push(`request ${page}`);
    if (page === 1) return answer(res, 1, firstPage.count, firstPage.link(apiBase), HOLD_MS);
    answer(res, page, 100, linkFor(apiBase, page), 0);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  events = [];
  firstPage = { count: 100, link: (base) => linkFor(base, 1) };
});

const list = (limit = 1000) => listRepositories({ client: createPlatformClient({ apiBase, fetch: upstreamFetch, timeoutMs: 5_000 }), token: "t", limit });

describe("repository listing: pages 2…n on page 1's headers", () => {
  it("asks for pages 2…n before page 1's body is in, and keeps page order", async () => {
    const { repositories, more } = await list();
    expect(more).toBe(false);
    expect(repositories.map((r) => r.name)).toEqual(Array.from({ length: PAGES * 100 }, (_, i) => `r${i}`));
    const firstBody = events.indexOf("body 1 sent");
    for (let page = 2; page <= PAGES; page += 1) expect(events.indexOf(`request ${page}`)).toBeLessThan(firstBody);
    expect(events.filter((e) => e.startsWith("request")).sort()).toEqual(["request 1", "request 2", "request 3", "request 4"]);
  });

  it("asks only for the pages the limit needs", async () => {
    const { repositories, more } = await list(150);
    expect(repositories).toHaveLength(150);
    expect(more).toBe(true);
    expect(events.filter((e) => e.startsWith("request"))).toEqual(["request 1", "request 2"]);
  });

  it("drops the early pages when page 1 comes back empty (a listing that ends there)", async () => {
    firstPage = { count: 0, link: (base) => linkFor(base, 1) };
    const { repositories, more } = await list();
    expect(repositories).toEqual([]);
    expect(more).toBe(false);
  });
});
