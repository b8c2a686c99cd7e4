// Scenario `dashboard`: the dashboard page (server/dashboard/) in Debian's Chromium over a fleet
// of 20 installations × 100 repositories (2,000, the broker's default cap), the broker's answer
// cached. Targets (issue 16, "2,000 repositories render in well under a second"): rows built and
// shown ≤ 250 ms, a search keystroke re-rendered ≤ 50 ms (medians, from the page's own
// performance.measure entries, which stop before layout and paint), and a refresh from click to
// the next paint ≤ 1 s.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { createSimulator } from "../../build/simulator/index.js";
import { startDashboard } from "../../build/server/dashboard/start-dashboard.js";
import { median, startBroker } from "../support.js";

const INSTALLATIONS = 20;
const REPOSITORIES = 100;
const RUNS = 7;
const SECRET = "bench-secret-0123456789abcdef0123456";

export const description = `the dashboard page in Chromium, ${INSTALLATIONS} installations × ${REPOSITORIES} repositories, cached answer`;

export async function run() {
  const sim = await createSimulator();
  const app = sim.createApp();
  for (let i = 0; i < INSTALLATIONS; i += 1) {
    const account = `bench-org-${String(i).padStart(2, "0")}`;
    const repositories = Array.from({ length: REPOSITORIES }, (_, j) => `repo-${String(j).padStart(3, "0")}`);
    sim.addInstallation({ appId: app.id, account, permissions: { contents: "read", metadata: "read" }, repositories });
    repositories.forEach((name, j) => {
      if (j % 3 === 2) return;
      sim.releases.add(`${account}/${name}`, { tagName: `v1.${j}.0`, isPrerelease: j % 5 === 0, isDraft: j % 7 === 0, createdAt: new Date(Date.UTC(2026, 0, 1) + (i * REPOSITORIES + j) * 3_600_000) });
    });
  }
  const broker = await startBroker({
    HOST_APP_ID: String(app.id),
    HOST_APP_PRIVATE_KEY: app.privateKeyPem,
    HOST_API_BASE: sim.apiBase,
    PROCESS_TRIGGER_SECRET: SECRET,
    LEGACY_QUOTA_KV: "memory://",
  });
  const dashboard = await startDashboard({ brokerUrl: new URL(`${broker.url}/`), secret: SECRET, fetch, timeoutMs: 60_000 }, { host: "127.0.0.1", port: 0 });
  const profile = mkdtempSync(join(tmpdir(), "tokensmith-bench-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1280, height: 900 },
  });
  try {
    const page = await context.newPage();
    await page.goto(`${dashboard.url}/`);
    await page.locator("#status", { hasText: "generated" }).waitFor({ timeout: 60_000 });
    const rows = await page.locator("#releases tbody tr").count();
    if (rows !== INSTALLATIONS * REPOSITORIES) throw new Error(`dashboard shows ${rows} rows`);
    const durations = (name) => page.evaluate(`performance.getEntriesByName(${JSON.stringify(name)}).map((entry) => entry.duration)`);

    // Refreshes of the cached answer: the first load crawled, these measure the page alone.
    // Timed in the page: the click, the answer (cached: a few ms), rows built, layout and the
    // next paint.
    const CLICK_TO_PAINT = `(async () => {
      const button = document.getElementById("refresh");
      const started = performance.now();
      button.click();
      while (button.disabled) await new Promise((resolve) => setTimeout(resolve, 1));
      await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
      return performance.now() - started;
    })()`;
    const clicks = [];
    for (let i = 0; i < RUNS; i += 1) clicks.push(await page.evaluate(CLICK_TO_PAINT));
    const shows = (await durations("tokensmith:show")).slice(1);
    await page.evaluate("performance.clearMeasures('tokensmith:render')");
    for (const text of ["bench-org-1", "repo-05", "v1.4", ""]) await page.locator("#search").fill(text);
    const keystrokes = await durations("tokensmith:render");

    const show = median(shows);
    const keystroke = median(keystrokes);
    const click = median(clicks);
    return [
      { metric: `rows built and shown, 2,000 repositories (median of ${shows.length})`, value: `${show.toFixed(1)} ms`, target: "≤ 250 ms", ok: show <= 250 },
      { metric: `search keystroke re-rendered (median of ${keystrokes.length})`, value: `${keystroke.toFixed(1)} ms`, target: "≤ 50 ms", ok: keystroke <= 50 },
      { metric: `refresh: click to next paint, cached answer (median of ${RUNS})`, value: `${click.toFixed(0)} ms`, target: "≤ 1000 ms", ok: click <= 1000 },
    ];
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
    await dashboard.close();
    await broker.close();
    await sim.close();
  }
}
