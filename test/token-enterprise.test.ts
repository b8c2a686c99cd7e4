// Enterprise support: two trusted issuers, each token minted by the App of the issuer that signed it.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { createSimulator, type Simulator } from "../simulator/index.js";

let main: TokenFixture;
let ent: Simulator;
let entApp: { id: number; privateKeyPem: string };
let entInstallation: number;
let broker: TestBroker;
let env: Record<string, string | undefined>;
const allLogs: string[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  main = await tokenFixture();
  ent = await createSimulator({ flavor: "enterprise" });
  entApp = ent.createApp({ keyFormat: "pkcs8" });
  entInstallation = ent.addInstallation({ appId: entApp.id, account: "octo-org", permissions: { contents: "write", pull_requests: "read", metadata: "read" }, repositories: ["app"] });
  env = {
    ...main.env,
    ENT_OIDC_ISSUER: ` ${ent.oidc.issuer}// `,
    ENT_API_BASE: ent.apiBase,
    ENT_APP_ID: String(entApp.id),
    ENT_APP_PRIVATE_KEY: entApp.privateKeyPem,
  };
  secrets.push(main.app.privateKeyPem, entApp.privateKeyPem);
});
afterAll(async () => {
  await main.sim.close();
  await ent.close();
  expectNoSecrets(allLogs, secrets);
});
beforeEach(async () => {
  main.sim.clearRequests();
  ent.clearRequests();
  broker = await startBroker({ ...env });
});
afterEach(async () => {
  allLogs.push(...broker.logs);
  await broker.close();
});

async function send(oidcToken: string) {
  secrets.push(oidcToken);
  const res = await postJson(`${broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}
const mintsOn = (sim: Simulator) => sim.requests.filter((r) => r.path.endsWith("/access_tokens"));

describe("enterprise issuer", () => {
  it("mints a tenant token with the tenant's App on the tenant's API", async () => {
    const res = await send(await ent.oidc.sign());
    expect(res.status).toBe(200);
    expect(ent.tokens.get(res.body.token as string)?.installationId).toBe(entInstallation);
    expect(ent.tokens.get(res.body.token as string)?.permissions).toEqual({ contents: "write", pull_requests: "read" });
    expect(mintsOn(ent)).toHaveLength(1);
    expect(mintsOn(ent)[0]!.auth).toEqual({ kind: "app", appId: String(entApp.id) });
    expect(mintsOn(main.sim)).toHaveLength(0);
    expect(main.sim.requests.filter((r) => r.path.includes("jwks"))).toHaveLength(0);
  });

  it("still verifies and mints a main-platform token with the main App", async () => {
    const res = await send(await main.sim.oidc.sign());
    expect(res.status).toBe(200);
    expect(main.sim.tokens.has(res.body.token as string)).toBe(true);
    expect(mintsOn(main.sim)[0]!.auth).toEqual({ kind: "app", appId: String(main.app.id) });
    expect(mintsOn(ent)).toHaveLength(0);
    expect(ent.requests.filter((r) => r.path.includes("jwks"))).toHaveLength(0);
  });

  it("refuses a token naming the tenant issuer but signed with the main issuer's key", async () => {
    const forged = await main.sim.oidc.sign({ iss: ent.oidc.issuer });
    const res = await send(forged);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("invalid_oidc_token");
    expect(["kid_not_found", "signature_invalid"]).toContain(res.body.reason);
    expect(mintsOn(ent)).toHaveLength(0);
    expect(mintsOn(main.sim)).toHaveLength(0);
  });

  it("refuses a token naming the main issuer but signed with the tenant's key", async () => {
    const forged = await ent.oidc.sign({ iss: main.sim.oidc.issuer });
    const res = await send(forged);
    expect(res.status).toBe(401);
    expect(["kid_not_found", "signature_invalid"]).toContain(res.body.reason);
    expect(mintsOn(ent)).toHaveLength(0);
    expect(mintsOn(main.sim)).toHaveLength(0);
  });

  it("refuses the tenant's key even under the main key's kid", async () => {
    const forged = await ent.oidc.sign({ iss: main.sim.oidc.issuer }, { kid: main.sim.oidc.currentKey.kid });
    const res = await send(forged);
    expect(res.body).toEqual({ error: "invalid_oidc_token", reason: "signature_invalid" });
  });

  it("ENT_APP_INSTALLATION_ID skips the per-repository lookup", async () => {
    broker.env.ENT_APP_INSTALLATION_ID = String(entInstallation);
    const res = await send(await ent.oidc.sign());
    expect(res.status).toBe(200);
    expect(ent.requests.some((r) => /\/repos\/[^/]+\/[^/]+\/installation$/.test(r.path))).toBe(false);
    const mint = ent.requests.find((r) => r.method === "POST" && r.path.endsWith(`/app/installations/${entInstallation}/access_tokens`));
    // By the claims' repository id, so the installation can only mint for the job's own repository.
    expect(mint?.body).toEqual({ repository_ids: [ent.repository("octo-org", "app").id], permissions: { contents: "write", pull_requests: "read" } });
  });

  it.each(["0", "-4", "abc", "1.5"])("ENT_APP_INSTALLATION_ID=%j is ignored", async (raw) => {
    broker.env.ENT_APP_INSTALLATION_ID = raw;
    const res = await send(await ent.oidc.sign());
    expect(res.status).toBe(200);
    expect(ent.requests.some((r) => /\/repos\/octo-org\/app\/installation$/.test(r.path))).toBe(true);
  });

  it("without ENT_OIDC_ISSUER a tenant token is from an untrusted issuer", async () => {
    delete broker.env.ENT_OIDC_ISSUER;
    const res = await send(await ent.oidc.sign());
    expect(res.body).toEqual({ error: "invalid_oidc_token", reason: "issuer_mismatch" });
    expect(ent.requests).toHaveLength(0);
  });

  it("a tenant without its App configured answers 503 app_unconfigured, and the main platform still works", async () => {
    delete broker.env.ENT_APP_PRIVATE_KEY;
    const res = await send(await ent.oidc.sign());
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: "app_unconfigured" });
    expect((await send(await main.sim.oidc.sign())).status).toBe(200);
  });

  it("a tenant key-set outage answers 503 for tenant tokens only", async () => {
    ent.oidc.keyEndpoint = "fail";
    try {
      expect((await send(await ent.oidc.sign())).body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
      expect((await send(await main.sim.oidc.sign())).status).toBe(200);
    } finally {
      ent.oidc.keyEndpoint = "ok";
    }
  });
});
