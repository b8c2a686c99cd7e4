// Issue 11 item 1, black box: the built broker in a process of its own, with its real 5 s refetch
// cooldown and real time. Started without SERVICE_JWKS_CACHE while the issuer's key endpoint fails,
// it gets two /token inside the cooldown (both 503, no verdict); once the issuer is back and the
// cooldown has passed, the next /token is answered 200 (it used to stay 503 until a restart).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/post-json.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const COOLDOWN_MS = 5_000; // DEFAULT_TIMING.jwksCooldownMs, what the process runs with

let fx: TokenFixture;
let broker: BrokerProcess | undefined;
const secrets: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
});
afterAll(async () => {
  await broker?.stop();
  await fx.sim.close();
  expectNoSecrets(broker?.lines ?? [], [...secrets, fx.app.privateKeyPem]);
});

async function exchange(url: string) {
  const oidcToken = await fx.sim.oidc.sign();
  secrets.push(oidcToken);
  const res = await postJson(`${url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

describe("key set after an issuer outage at start-up", () => {
  it("answers 200 once the issuer is back and the cooldown has passed, after two 503s inside the cooldown", async () => {
    fx.sim.oidc.keyEndpoint = "fail";
    broker = await spawnBroker({ ...fx.env, SERVICE_JWKS_CACHE: undefined });

    for (let i = 0; i < 2; i += 1) {
      const res = await exchange(broker.url);
      expect(res.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
      expect(res.status).toBe(503);
      const wait = Number(res.headers.get("retry-after"));
      expect(wait).toBeGreaterThanOrEqual(1);
      expect(wait).toBeLessThanOrEqual(COOLDOWN_MS / 1000);
    }

    fx.sim.oidc.keyEndpoint = "ok";
    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 1_000));
    const res = await exchange(broker.url);
    expect(res.body).toMatchObject({ repository: "octo-org/app" });
    expect(res.status).toBe(200);
    expect(fx.sim.oidc.jwksRequests).toBe(1);
  });
});
