// SERVICE_JWKS_CACHE: the last-known-good key set shared through Redis between broker processes.
// Runs against the real Redis on 127.0.0.1:6379 (.ci/run starts one when none answers).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

let fx: TokenFixture;
const processes: BrokerProcess[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await fx.sim.close();
  expectNoSecrets(processes.flatMap((p) => p.lines), secrets);
});

async function start(env: Record<string, string | undefined>) {
  const broker = await spawnBroker({ ...fx.env, LOG_LEVEL: "debug", ...env });
  processes.push(broker);
  return broker;
}

async function exchange(broker: BrokerProcess) {
  const oidcToken = await fx.sim.oidc.sign();
  secrets.push(oidcToken);
  const res = await postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

describe("SERVICE_JWKS_CACHE=redis://", () => {
  it("lets a second broker process verify with the shared snapshot while the key endpoint is down", async () => {
    fx.sim.oidc.keyEndpoint = "ok";
    const shared = { SERVICE_JWKS_CACHE: "redis://127.0.0.1:6379" };
    const first = await start(shared);
    expect((await exchange(first)).status).toBe(200);

    fx.sim.oidc.keyEndpoint = "fail";
    const second = await start(shared);
    const res = await exchange(second);
    expect(res.body).toMatchObject({ repository: "octo-org/app" });
    expect(res.status).toBe(200);

    const unbound = await start({});
    const refused = await exchange(unbound);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
  });

  it("keeps answering when the Redis URL points at nothing", async () => {
    fx.sim.oidc.keyEndpoint = "ok";
    const broker = await start({ SERVICE_JWKS_CACHE: "redis://127.0.0.1:1" });
    const started = Date.now();
    expect((await exchange(broker)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
