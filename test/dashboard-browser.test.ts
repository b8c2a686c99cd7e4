// The dashboard page in a real browser: the Chromium that ships inside the @sparticuz/chromium npm
// package (support/packaged-chromium.ts: no system package needed) driven by playwright-core, over the
// dashboard server, over a real broker, over the loopback simulator with a simulated fleet. It
// lists the fleet newest first, sorts, filters, shows the truncated banner and broker errors as
// sentences, is usable with the keyboard, and nothing the browser received holds the bearer secret.
// Its screenshot goes to a temporary directory; with TOKENSMITH_UPDATE_SCREENSHOT=1 it replaces
// docs/dashboard.png (docs/development.md), which a test run never rewrites otherwise.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { chromium, type BrowserContext, type Page, type Response } from "playwright-core";
import { ERROR_CODES } from "../shared/error-codes.js";
import { startDashboard, type RunningDashboard } from "../server/dashboard/start-dashboard.js";
import { loopbackOnlyFetch, startBroker, type TestBroker } from "./support/broker.js";
import { packagedChromium } from "./support/packaged-chromium.js";
import { releasesFixture, TRIGGER_SECRET, type ReleasesFixture } from "./support/releases-fixture.js";

const DOCS_SCREENSHOT = fileURLToPath(new URL("../docs/dashboard.png", import.meta.url));
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let fx: ReleasesFixture;
let broker: TestBroker;
let dashboard: RunningDashboard;
let profile: string;
let context: BrowserContext;
let page: Page;
/** Everything the browser received (status line, headers, body) and every address it asked for. */
const received: Array<Promise<{ url: string; text: string }>> = [];
const requested: string[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  fx = await releasesFixture();
  fx.install("acme", ["api", "web", "mobile", "docs", "cli", "infra"]);
  fx.install("acme-labs", ["sandbox", "prototype-ui"]);
  // Relative to now, so the page's relative times (and the screenshot) are the same on every run.
  const ago = (ms: number) => new Date(Date.now() - ms);
  fx.sim.releases.add("acme/web", { tagName: "v2.0.0-rc.2", name: "Web 2.0 release candidate 2", isPrerelease: true, createdAt: ago(5 * HOUR) });
  fx.sim.releases.add("acme/api", { tagName: "v3.4.1", name: "Spring cleaning", createdAt: ago(2 * DAY) });
  fx.sim.releases.add("acme-labs/prototype-ui", { tagName: "v0.1.0-alpha", isPrerelease: true, createdAt: ago(9 * DAY) });
  fx.sim.releases.add("acme/cli", { tagName: "v0.8.0", name: "CLI 0.8", createdAt: ago(21 * DAY) });
  fx.sim.releases.add("acme/infra", { tagName: "v12.1.0", name: null, createdAt: ago(120 * DAY) });
  fx.sim.releases.add("acme/mobile", { tagName: "v1.9.0", name: "Mobile 1.9", isDraft: true, createdAt: ago(HOUR) });
  broker = await startBroker({ ...fx.env, LEGACY_QUOTA_KV: "memory://" });
  dashboard = await startDashboard(
    { brokerUrl: new URL(`${broker.url}/`), secret: TRIGGER_SECRET, fetch: loopbackOnlyFetch, timeoutMs: 10_000 },
    { host: "127.0.0.1", port: 0 },
  );
  profile = mkdtempSync(join(tmpdir(), "tokensmith-chromium-"));
  const browser = await packagedChromium();
  context = await chromium.launchPersistentContext(profile, {
    executablePath: browser.executablePath,
    env: browser.env,
    headless: true,
    // The package's build renders with SwiftShader (no GPU libraries on the machine).
    args: ["--headless", "--no-sandbox", "--no-zygote", "--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1100, height: 560 },
    locale: "en-GB",
    timezoneId: "UTC",
  });
  context.on("request", (request) => requested.push(request.url()));
  context.on("response", (response) => received.push(everything(response)));
  // Playwright's clock: it follows the real one until a test moves it (auto-refresh, below).
  await context.clock.install();
  page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) pageErrors.push(message.text());
  });
  await page.goto(`${dashboard.url}/`);
  await page.locator("#status").filter({ hasText: "generated" }).waitFor();
}, 60_000);

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await dashboard?.close();
  await broker?.close();
  await fx?.sim.close();
});

async function everything(response: Response): Promise<{ url: string; text: string }> {
  const headers = await response.allHeaders();
  const body = await response.body().catch(() => Buffer.alloc(0));
  return { url: response.url(), text: `${response.status()} ${response.statusText()}\n${JSON.stringify(headers)}\n${body.toString("latin1")}` };
}

/** The repository column, top to bottom, as displayed. */
function repositories(): Promise<string[]> {
  return page.locator("#releases tbody th").allTextContents();
}

async function refresh(): Promise<void> {
  const answered = page.waitForResponse((response) => response.url().endsWith("/api/releases"));
  await page.locator("#refresh").click();
  await answered;
  // The page has rendered the answer once the button is usable again.
  await page.locator("#refresh:enabled").waitFor();
}

describe("the dashboard page", () => {
  it("lists the simulated fleet newest first: tag, name, relative time, badges, links, no-release marks", async () => {
    expect(await repositories()).toEqual([
      "acme/web", "acme/api", "acme-labs/prototype-ui", "acme/cli", "acme/infra", "acme/mobile", "acme-labs/sandbox", "acme/docs",
    ]);
    const api = page.locator("#releases tbody tr", { has: page.locator("th", { hasText: /^acme\/api$/ }) });
    await expect(api.locator("td.tag a").getAttribute("href")).resolves.toBe("https://github.com/acme/api/releases/tag/v3.4.1");
    await expect(api.locator("td.tag").textContent()).resolves.toBe("v3.4.1");
    await expect(api.locator("td.name").textContent()).resolves.toBe("Spring cleaning");
    await expect(api.locator("time").textContent()).resolves.toBe("2 days ago");
    await expect(api.locator("time").getAttribute("title")).resolves.toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    const web = page.locator("tr", { has: page.locator("th", { hasText: /^acme\/web$/ }) });
    await expect(web.locator(".badge").allTextContents()).resolves.toEqual(["prerelease"]);
    await expect(web.locator("time").textContent()).resolves.toBe("5 hours ago");
    const mobile = page.locator("tr", { has: page.locator("th", { hasText: /^acme\/mobile$/ }) });
    await expect(mobile.locator(".badge").allTextContents()).resolves.toEqual(["draft"]);
    await expect(mobile.locator("td.published").textContent()).resolves.toBe("unpublished");
    const docs = page.locator("tr.no-release", { has: page.locator("th", { hasText: /^acme\/docs$/ }) });
    await expect(docs.locator(".badge").allTextContents()).resolves.toEqual(["no release"]);
    await expect(page.locator("#status").textContent()).resolves.toBe("8 repositories · generated just now · fresh crawl");
    await expect(page.locator("#status time").getAttribute("datetime")).resolves.toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(await page.locator("#truncated").isHidden()).toBe(true);
    expect(await page.locator("#error").isHidden()).toBe(true);

    const screenshot = process.env.TOKENSMITH_UPDATE_SCREENSHOT === "1" ? DOCS_SCREENSHOT : join(profile, "dashboard.png");
    await page.screenshot({ path: screenshot, fullPage: true, animations: "disabled", caret: "hide" });
    expect(readFileSync(screenshot).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  });

  it("sorts by repository and by date, and says so to assistive technology", async () => {
    const repoHeader = page.locator("thead th", { has: page.locator('button[data-sort="repo"]') });
    await page.locator('button[data-sort="repo"]').click();
    expect(await repositories()).toEqual([...(await repositories())].sort());
    expect(await repoHeader.getAttribute("aria-sort")).toBe("ascending");
    // With the keyboard: the button keeps focus, Enter flips the order.
    await page.keyboard.press("Enter");
    expect(await repoHeader.getAttribute("aria-sort")).toBe("descending");
    expect((await repositories())[0]).toBe("acme/web");
    await page.locator('button[data-sort="date"]').click();
    expect(await repoHeader.getAttribute("aria-sort")).toBe("none");
    expect((await repositories()).slice(0, 2)).toEqual(["acme/web", "acme/api"]);
  });

  it("filters by repository or tag from the search box, reached with /", async () => {
    await page.locator("body").press("/");
    expect(await page.evaluate("document.activeElement && document.activeElement.id")).toBe("search");
    await page.keyboard.type("labs");
    expect(await repositories()).toEqual(["acme-labs/prototype-ui", "acme-labs/sandbox"]);
    await expect(page.locator("#status").textContent()).resolves.toMatch(/^2 of 8 repositories shown · generated/);
    await page.locator("#search").fill("RC.2");
    expect(await repositories()).toEqual(["acme/web"]);
    await page.locator("#search").fill("no such thing");
    expect(await repositories()).toEqual([]);
    expect(await page.locator("#no-match").isVisible()).toBe(true);
    await page.keyboard.press("Escape");
    expect(await repositories()).toHaveLength(8);
  });

  it("hides repositories without releases with the toggle (Space on the checkbox)", async () => {
    await page.locator("#hide-empty").focus();
    await page.keyboard.press("Space");
    expect(await page.locator("#hide-empty").isChecked()).toBe(true);
    const shown = await repositories();
    expect(shown).toHaveLength(6);
    expect(shown).not.toContain("acme/docs");
    expect(shown).not.toContain("acme-labs/sandbox");
    await page.keyboard.press("Space");
    expect(await repositories()).toHaveLength(8);
  });

  it("refreshes, and says when the answer came from the broker's cache", async () => {
    await refresh();
    await expect(page.locator("#status").textContent()).resolves.toBe("8 repositories · generated just now · from the broker's cache");
  });

  it("shows the banner when the broker's answer is truncated", async () => {
    broker.env.RELEASES_MAX_REPOSITORIES = "3";
    try {
      await refresh();
      expect(await page.locator("#truncated").isVisible()).toBe(true);
      await expect(page.locator("#truncated").textContent()).resolves.toMatch(/^\s*Incomplete: a traversal cap was reached/);
      expect(await repositories()).toHaveLength(3);
    } finally {
      delete broker.env.RELEASES_MAX_REPOSITORIES;
    }
    await refresh();
    expect(await page.locator("#truncated").isHidden()).toBe(true);
  });

  it.each([
    ["unauthorized", 401, { PROCESS_TRIGGER_SECRET: "not-the-dashboards-secret-0123456789abcdef" }, `${ERROR_CODES.unauthorized.meaning} TOKENSMITH_SECRET must be the broker's PROCESS_TRIGGER_SECRET.`],
    ["releases_disabled", 503, { PROCESS_TRIGGER_SECRET: undefined }, `${ERROR_CODES.releases_disabled.meaning} ${ERROR_CODES.releases_disabled.hint}`],
    ["app_unconfigured", 503, { HOST_APP_ID: undefined }, `${ERROR_CODES.app_unconfigured.meaning} ${ERROR_CODES.app_unconfigured.hint}`],
  ] as Array<[string, number, Record<string, string | undefined>, string]>)("shows the broker's %s as a sentence from the shared table", async (code, status, change, sentence) => {
    const saved = { ...broker.env };
    Object.assign(broker.env, change);
    try {
      await refresh();
      expect(await page.locator("#error").isVisible()).toBe(true);
      await expect(page.locator("#error-sentence").textContent()).resolves.toBe(sentence);
      await expect(page.locator("#error-code").textContent()).resolves.toBe(`HTTP ${status} · ${code}`);
      expect(await repositories()).toHaveLength(8);
    } finally {
      Object.assign(broker.env, saved);
    }
    await refresh();
    expect(await page.locator("#error").isHidden()).toBe(true);
  });

  it("shows what the answer holds as text, never as markup", async () => {
    fx.install("evil", ["markup"]);
    fx.sim.releases.add("evil/markup", { tagName: "<b>v1</b>", name: '<img src=x onerror="document.title=1">' });
    // Another cap is another cache key: a fresh crawl that sees the new installation.
    broker.env.RELEASES_MAX_REPOSITORIES = "1999";
    try {
      await refresh();
    } finally {
      delete broker.env.RELEASES_MAX_REPOSITORIES;
    }
    const row = page.locator("tr", { has: page.locator("th", { hasText: /^evil\/markup$/ }) });
    await expect(row.locator("td.name").textContent()).resolves.toBe('<img src=x onerror="document.title=1">');
    await expect(row.locator("td.tag").textContent()).resolves.toBe("<b>v1</b>");
    expect(await page.locator("#releases img, #releases b").count()).toBe(0);
    expect(await page.title()).toBe("Releases · tokensmith");
  });

  it("refreshes every minute when asked to, and stops when unticked", async () => {
    const asked = () => requested.filter((url) => url.endsWith("/api/releases")).length;
    await page.locator("#auto-refresh").check();
    const before = asked();
    const answered = page.waitForResponse((response) => response.url().endsWith("/api/releases"));
    await page.clock.fastForward(60_000);
    await answered;
    await page.locator("#refresh:enabled").waitFor();
    expect(asked()).toBe(before + 1);
    // The default cap's aggregate, still cached (the crawl that saw evil/markup had another cap).
    await expect(page.locator("#status").textContent()).resolves.toMatch(/^8 repositories · generated 1 minute ago · from the broker's cache$/);
    await page.locator("#auto-refresh").uncheck();
    await page.clock.fastForward(120_000);
    expect(asked()).toBe(before + 1);
  });

  it("received nothing holding the bearer secret, asked only the dashboard, and broke no CSP rule", async () => {
    const all = await Promise.all(received);
    expect(all.map((entry) => new URL(entry.url).pathname)).toEqual(expect.arrayContaining(["/", "/app.js", "/app.css", "/api/releases"]));
    expect(all.length).toBeGreaterThan(10);
    for (const entry of all) expect(entry.text).not.toContain(TRIGGER_SECRET);
    for (const url of requested) expect(url.startsWith(`${dashboard.url}/`) || url.startsWith("data:")).toBe(true);
    expect(await page.content()).not.toContain(TRIGGER_SECRET);
    expect(pageErrors).toEqual([]);
  });
});
