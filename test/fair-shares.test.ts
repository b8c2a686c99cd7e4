// Issue 37, item 4: one repository flooding /token with valid OIDC tokens of its own (each a fresh
// one, each minting) does not spend another owner's mints (docs/security.md#fair-shares-of-the-apps-budget).
// Over real HTTP against the simulator, GitHub's points enforced on both sides on one scaled-down
// window: the quiet owner's every /token is answered 200 while the flood runs; the flood is held to
// its share — refused at once with 429 installation_tokens_limited and Retry-After once its queue
// is full — and the platform refuses nothing; the admin port's /metrics shows the short budget
// (tokensmith_upstream_waiting{for="points"} while it waits, tokensmith_upstream_refused_total
// {reason="share"} after), the series the documented alert watches.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startAdmin, type AdminHandle } from "../server/admin/start-admin.js";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { sample, scrape } from "./support/metrics-text.js";

/** Points per window on both sides, and the window scaled down (simulator and broker alike). */
const BUDGET = 60;
const WINDOW_MS = 4_000;
let fx: TokenFixture;
let broker: TestBroker;
let admin: AdminHandle;
let adminUrl: string;
const secrets: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
  fx.sim.addInstallation({ appId: fx.app.id, account: "flood-org", permissions: { ...INSTALLED_PERMISSIONS }, repositories: ["app"] });
  fx.sim.limits.values.pointsPerMinute = BUDGET;
  fx.sim.limits.values.pointsWindowMs = WINDOW_MS;
  broker = await startBroker({ ...fx.env, UPSTREAM_POINTS_PER_MINUTE: String(BUDGET) }, { timing: { pointsWindowMs: WINDOW_MS, requestDeadlineMs: 20_000 } });
  admin = startAdmin({ env: { ADMIN_PORT: "0", ADMIN_HOST: "127.0.0.1" }, metrics: broker.app.broker.metrics, log: broker.app.broker.log })!;
  adminUrl = `http://127.0.0.1:${await admin.port}`;
});
afterAll(async () => {
  await admin.close();
  await broker.close();
  await fx.sim.close();
  expectNoSecrets(broker.logs, [...secrets, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
});

/** One job's /token: a fresh OIDC token of `repository` (its own jti: it mints once). */
async function job(repository: string) {
  const oidcToken = await fx.sim.oidc.sign({ repository });
  secrets.push(oidcToken);
  const [owner, repo] = repository.split("/");
  const started = Date.now();
  const res = await postJson(`${broker.url}/token`, { oidcToken, owner, repo });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return { status: res.status, error: res.body?.error as string | undefined, retryAfter: res.headers.get("retry-after"), ms: Date.now() - started };
}

describe("one repository flooding /token with valid OIDC tokens of its own", () => {
  it("another owner's jobs all get their token while it floods; the flood is held to its share, refused at once past it with 429 and Retry-After; the platform refuses nothing; /metrics shows the short budget", async () => {
    const refusedBefore = fx.sim.limits.refused.points;
    const idle = await scrape(adminUrl);
    expect(sample(idle, "tokensmith_upstream_refused_total", { platform: "main", reason: "share" })).toBe(0);
    expect(sample(idle, "tokensmith_upstream_refused_total", { platform: "main", reason: "points" })).toBe(0);

    // The flood: 60 jobs of flood-org/app at once, each with a valid token of its own (300 points of mints: 5 windows' worth).
    const flood = Promise.all(Array.from({ length: 60 }, () => job("flood-org/app")));
    // While it runs, calls wait for points, and the gauge the alert watches says so.
    let waiting = 0;
    for (let i = 0; i < 200 && waiting === 0; i += 1) {
      waiting = sample(await scrape(adminUrl), "tokensmith_upstream_waiting", { platform: "main", for: "points" }) ?? 0;
      if (waiting === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(waiting).toBeGreaterThan(0);

    // The quiet owner: one job after another while the flood is queued.
    const quiet = [];
    for (let i = 0; i < 6; i += 1) quiet.push(await job("octo-org/app"));
    const flooded = await flood;

    expect(quiet.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // The flood got tokens too (its share), and past its share with its queue full a quick 429 with Retry-After.
    const minted = flooded.filter((answer) => answer.status === 200);
    const limited = flooded.filter((answer) => answer.status === 429);
    expect(minted.length).toBeGreaterThan(0);
    expect(limited.length).toBeGreaterThan(0);
    for (const answer of limited) {
      expect(answer.error).toBe("installation_tokens_limited");
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // Nothing else: no 502 installation_token_failed from a budget spent by someone else.
    expect(flooded.filter((answer) => answer.status !== 200 && answer.status !== 429)).toEqual([]);
    // The platform never had to refuse a call: the broker kept the budget.
    expect(fx.sim.limits.refused.points).toBe(refusedBefore);

    const after = await scrape(adminUrl);
    expect(sample(after, "tokensmith_upstream_refused_total", { platform: "main", reason: "share" })).toBe(limited.length);
  }, 120_000);

  it("the documented alert watches the refusals as well as the waiting calls", () => {
    const guide = readFileSync(new URL("../docs/deploying.md", import.meta.url), "utf8");
    expect(guide).toContain('increase(tokensmith_upstream_refused_total{reason=~"points|share"}[5m]) > 0');
    expect(guide).toContain('tokensmith_upstream_waiting{for="points"} > 0');
  });
});
