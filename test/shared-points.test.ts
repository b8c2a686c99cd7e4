// Issue 37, item 3: the App's REST points window is shared by the broker instances on one Redis
// (docs/operations.md#shared-limits). Two built brokers (real processes) on the suite's Redis
// through LEGACY_QUOTA_KV, each sent more cold /token requests than the budget holds, over real
// HTTP against the simulator, which enforces the same budget as GitHub does (a 403 past it): the
// platform refuses nothing and sees no more than the budget in its window, whichever instance sent
// the calls. Each instance alone would have sent up to the whole budget (test/token-limits.test.ts).
// A call the shared window has no room for before its request's deadline is refused at once, with
// the answer this instance's own window gives (502 installation_token_failed with Retry-After),
// never held until the deadline.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { sample } from "./support/metrics-text.js";
import { REDIS_URL } from "./support/redis-url.js";
import { freePort } from "./support/redis-server.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

/** Points a minute on both sides: an installation lookup (1) at each instance, then 5 mints (5 each). */
const BUDGET = 30;
let fx: TokenFixture;
const brokers: BrokerProcess[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
  fx.sim.addInstallation({ appId: fx.app.id, account: "pair-org", permissions: { ...INSTALLED_PERMISSIONS }, repositories: ["shared"] });
  fx.sim.limits.values.pointsPerMinute = BUDGET;
});
afterAll(async () => {
  for (const broker of brokers) await broker.stop();
  await fx.sim.close();
  expectNoSecrets(
    brokers.flatMap((b) => b.lines),
    [...secrets, fx.app.privateKeyPem],
  );
}, 30_000);

async function exchange(at: BrokerProcess, repo: string) {
  const oidcToken = await fx.sim.oidc.sign({ repository: `pair-org/${repo}` });
  secrets.push(oidcToken);
  const res = await postJson(`${at.url}/token`, { oidcToken, owner: "pair-org", repo });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

describe("two instances on one Redis (LEGACY_QUOTA_KV) share the App's points window", () => {
  it("6 exchanges at each at once: the platform sees at most the budget and refuses nothing; the rest are refused at once", async () => {
    const ports = [await freePort(), await freePort()];
    const started = await Promise.all(ports.map((port) => spawnBroker({ ...fx.env, LEGACY_QUOTA_KV: REDIS_URL, UPSTREAM_POINTS_PER_MINUTE: String(BUDGET), ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1" }, 30_000)));
    brokers.push(...started);
    const [a, b] = started as [BrokerProcess, BrokerProcess];
    fx.sim.clearRequests();
    const refusedBefore = fx.sim.limits.refused.points;

    // Alone, each instance would send its lookup and 5 mints (26 points): 52 between the two.
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => exchange(i % 2 === 0 ? a : b, "shared")));

    const appPoints = fx.sim.requests.filter((r) => r.auth.kind === "app").reduce((sum, r) => sum + (r.method === "GET" ? 1 : 5), 0);
    expect(appPoints).toBeLessThanOrEqual(BUDGET);
    expect(fx.sim.limits.refused.points).toBe(refusedBefore);
    const minted = answers.filter((res) => res.status === 200);
    expect(minted.length).toBeGreaterThanOrEqual(1);
    expect(minted.length).toBeLessThanOrEqual(Math.floor((BUDGET - 2) / 5));
    // The others were not served: the mint's code for a budget spent, with Retry-After, as a call
    // this instance's own window cannot fit before the deadline is answered (test/token-limits.test.ts).
    const unserved = answers.filter((res) => res.status !== 200);
    for (const res of unserved) {
      expect([res.status, res.body]).toEqual([502, { error: "installation_token_failed" }]);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    // Each was refused by its broker before anything was sent (no points before the deadline, in its
    // own window or the shared one: the window of 60 s opens after the 25 s deadline), none held
    // until the deadline cut it off: the refusals counted are the requests not served, and every
    // failure was the gate's refusal (a local 429), none a call ended by the deadline.
    let refusedPoints = 0;
    for (const port of ports) refusedPoints += sample(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), "tokensmith_upstream_refused_total", { platform: "main", reason: "points" }) ?? Number.NaN;
    expect(refusedPoints).toBe(unserved.length);
    const failures = started.flatMap((broker) => broker.lines.filter((line) => line.includes('"msg":"upstream or configuration failure"')));
    expect(failures).toHaveLength(unserved.length);
    for (const line of failures) expect(line).toContain('"detail":"installation_token_failed: status 429"');
  }, 90_000);
});
