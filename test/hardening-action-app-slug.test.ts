// Issue 25, interface parity with actions/create-github-app-token: the real broker's 200 carries
// installation_id and app_slug (from the installation lookup GitHub already answers with
// `app_slug`: no extra platform request), and the bundled action (dist/main on Node 24, run as the
// runner runs it) writes them to the installation-id and app-slug outputs.
import { beforeAll, describe, expect, it } from "@jest/globals";
import { brokerPerTest } from "./support/broker-per-test.js";
import { runStep } from "./support/action-runner.js";
import { node24 } from "./support/action-node24.js";
import { runnerJobEnv } from "./support/runner-env.js";

const t = brokerPerTest();
let node = "";
beforeAll(() => {
  node = node24();
}, 360_000);

describe("installation-id and app-slug, from the real broker through dist/", () => {
  it("are the installation's id and its App's slug, from the one installation lookup (no GET /app)", async () => {
    const main = await runStep("main", { node, inputs: { "auth-mode": "public-app", "broker-url": t.broker.url }, env: runnerJobEnv(t.fx.sim) });
    expect(main.exitCode).toBe(0);
    expect(main.outputs["installation-id"]).toBe(String(t.fx.installationId));
    const lookup = t.fx.sim.requests.find((r) => r.method === "GET" && r.path === "/repos/octo-org/app/installation");
    const slug = (lookup?.response?.body as { app_slug?: unknown } | undefined)?.app_slug;
    expect(slug).toBe(`tokensmith-test-${t.fx.app.id}`);
    expect(main.outputs["app-slug"]).toBe(slug);
    expect(t.fx.sim.requests.filter((r) => r.method === "GET" && r.path.startsWith("/app")).map((r) => r.path)).toEqual([]); // no GET /app for the slug
    expect(t.fx.sim.requests.filter((r) => r.method === "GET" && r.path.endsWith("/installation"))).toHaveLength(1);
  });

  it("GitHub's ~520-character stateless tokens (the simulator's default) pass the action's token check (bounded at 1024)", async () => {
    expect(t.fx.sim.tokenFormat).toBe("stateless");
    const main = await runStep("main", { node, inputs: { "auth-mode": "public-app", "broker-url": t.broker.url }, env: runnerJobEnv(t.fx.sim) });
    expect(main.exitCode).toBe(0);
    expect(main.outputs.token!.length).toBeGreaterThanOrEqual(500);
    expect(t.fx.sim.tokens.has(main.outputs.token!)).toBe(true);
  });
});
