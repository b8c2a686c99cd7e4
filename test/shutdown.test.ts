// SIGTERM: the broker process stops accepting, finishes the requests in flight, and exits 0.
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker } from "./support/spawn-broker.js";

let fx: TokenFixture;
beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await fx.sim.close();
});

it("finishes a request in flight, refuses new ones, and exits 0 within 10 s", async () => {
  const broker = await spawnBroker({ ...fx.env });
  const oidcToken = await fx.sim.oidc.sign();
  // A warm-up exchange so the in-flight one below is slow only because of the platform.
  expect((await postJson(`${broker.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" })).status).toBe(200);

  fx.sim.latencyMs = 1500;
  const inFlight = postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  await new Promise((r) => setTimeout(r, 300));
  const signalledAt = Date.now();
  const exited = broker.stop("SIGTERM");
  await new Promise((r) => setTimeout(r, 200));

  await expect(fetch(`${broker.url}/token`, { method: "POST", body: "{}" })).rejects.toThrow();
  const answer = await inFlight;
  expect(answer.status).toBe(200);
  expect(answer.body.repository).toBe("octo-org/app");
  expect(await exited).toBe(0);
  expect(Date.now() - signalledAt).toBeLessThan(10_000);
  fx.sim.latencyMs = 0;
  // Every line reached stdout before the process exited: the in-flight request's own lines too.
  const entries = broker.lines.map((line) => JSON.parse(line) as { msg?: string; status?: number });
  expect(entries.filter((e) => e.msg === "installation token minted")).toHaveLength(2);
  expect(entries.filter((e) => e.msg === "request" && e.status === 200)).toHaveLength(2);
  expect(entries.some((e) => e.msg?.startsWith("shutting down"))).toBe(true);
  expectNoSecrets(broker.lines, [oidcToken, answer.body.token as string, fx.app.privateKeyPem]);
});
