// POST /token over HTTP, through the broker, to the loopback platform simulator.
import { describe, expect, it } from "@jest/globals";
import { postJson, startBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const secrets: string[] = [];

const t = brokerPerTest({ secrets });

async function exchange(claims: Record<string, unknown> = {}, body: Record<string, unknown> = {}, signOptions?: Parameters<TokenFixture["sim"]["oidc"]["sign"]>[1]) {
  const oidcToken = await t.fx.sim.oidc.sign(claims, signOptions);
  secrets.push(oidcToken);
  const response = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app", ...body });
  if (typeof response.body?.token === "string") secrets.push(response.body.token);
  return response;
}

const mints = () => t.fx.sim.requests.filter((r) => r.method === "POST" && /\/access_tokens$/.test(r.path));
const lookups = () => t.fx.sim.requests.filter((r) => r.method === "GET" && /\/installation$/.test(r.path));

describe("POST /token success", () => {
  it("mints a token scoped to the one repository with the default permissions", async () => {
    const { status, body, headers } = await exchange();
    expect(status).toBe(200);
    // The API's three fields, and the two additive ones the action outputs (installation-id, app-slug).
    expect(Object.keys(body).sort()).toEqual(["app_slug", "expires_at", "installation_id", "permissions", "repository", "token"]);
    expect(body.installation_id).toBe(t.fx.installationId);
    expect(body.app_slug).toBe(`tokensmith-test-${t.fx.app.id}`);
    expect(body.repository).toBe("octo-org/app");
    const issued = t.fx.sim.tokens.get(body.token as string);
    expect(issued).toBeDefined();
    expect(issued!.installationId).toBe(t.fx.installationId);
    expect(issued!.repositories).toEqual(["app"]);
    expect(issued!.permissions).toEqual({ contents: "write", pull_requests: "write" });
    expect(headers.get("content-type")).toMatch(/application\/json/);
    const [mint] = mints();
    // By id (the claims' repository_id), never by name: a name can come to mean another repository.
    expect(mint!.body).toEqual({ repository_ids: [t.fx.sim.repository("octo-org", "app").id], permissions: { contents: "write", pull_requests: "write" } });
    expect(mint!.auth).toEqual({ kind: "app", appId: String(t.fx.app.id) });
  });

  it("passes expires_at through unchanged from the platform", async () => {
    const { body } = await exchange();
    const minted = t.fx.sim.tokens.get(body.token as string)!;
    const platformText = (mints()[0] as unknown as { response?: { body?: { expires_at?: string } } }).response?.body?.expires_at;
    expect(body.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Date.parse(body.expires_at as string)).toBe(Math.floor(minted.expiresAt.getTime() / 1000) * 1000);
    if (platformText) expect(body.expires_at).toBe(platformText);
  });

  it("mints a fresh token on every call and reuses the installation lookup", async () => {
    const first = await exchange();
    const second = await exchange();
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(first.body.token).not.toBe(second.body.token);
    expect(mints()).toHaveLength(2);
    expect(lookups()).toHaveLength(1);
  });

  it("hands concurrent callers for one repository distinct tokens", async () => {
    const answers = await Promise.all([exchange(), exchange(), exchange(), exchange()]);
    const tokens = new Set(answers.map((a) => a.body.token));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(tokens.size).toBe(4);
    // A fresh broker: all four missed the App JWT cache together and shared one signature.
    expect(t.broker.app.broker.appJwt.signedCount).toBe(1);
  });

  it.each<["stateless" | "classic", number]>([
    ["stateless", 450],
    ["classic", 40],
  ])("does not assume a token length: a %s token passes through", async (format, atLeast) => {
    t.fx.sim.tokenFormat = format;
    try {
      const { status, body } = await exchange();
      expect(status).toBe(200);
      expect((body.token as string).length).toBeGreaterThanOrEqual(atLeast);
      expect(t.fx.sim.tokens.has(body.token as string)).toBe(true);
    } finally {
      t.fx.sim.tokenFormat = "stateless";
    }
  });

  it("ignores ref, runId and sha for authorisation", async () => {
    const odd = { ref: "refs/heads/evil", runId: "1", sha: "0".repeat(40) };
    expect((await exchange({}, odd)).status).toBe(200);
    const mismatch = await exchange({ repository: "octo-org/other" }, odd);
    expect(mismatch.status).toBe(403);
    expect(mismatch.body).toEqual({ error: "repo_mismatch" });
  });
});

describe("POST /token request validation", () => {
  it.each([
    ["not json", "{oidcToken:"],
    ["empty body", ""],
  ])("400 invalid_json for %s", async (_name, raw) => {
    const res = await postJson(`${t.broker.url}/token`, raw);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_json" });
  });

  it.each([["[]"], ['"text"'], ["null"], ["42"]])("400 invalid_request for the JSON value %s", async (raw) => {
    const res = await postJson(`${t.broker.url}/token`, raw);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_request" });
  });

  it.each(["oidcToken", "owner", "repo"])("400 missing_required_fields without %s, or with it empty", async (field) => {
    const full: Record<string, unknown> = { oidcToken: "x.y.z", owner: "octo-org", repo: "app" };
    const absent = { ...full };
    delete absent[field];
    for (const body of [absent, { ...full, [field]: "" }]) {
      const res = await postJson(`${t.broker.url}/token`, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: "missing_required_fields" });
    }
  });

  it("400 invalid_request for a field of the wrong type", async () => {
    const res = await postJson(`${t.broker.url}/token`, { oidcToken: 7, owner: "octo-org", repo: "app" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_request" });
  });

  it("does not let __proto__ keys stand in for fields", async () => {
    const res = await postJson(`${t.broker.url}/token`, '{"__proto__":{"oidcToken":"a.b.c","owner":"o","repo":"r"}}');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "missing_required_fields" });
  });

  it("413 payload_too_large over 64 KiB", async () => {
    const res = await postJson(`${t.broker.url}/token`, { oidcToken: "x".repeat(70 * 1024), owner: "o", repo: "r" });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: "payload_too_large" });
  });

  it("accepts a body sent without a JSON content type", async () => {
    const oidcToken = await t.fx.sim.oidc.sign();
    secrets.push(oidcToken);
    const response = await fetch(`${t.broker.url}/token`, { method: "POST", body: JSON.stringify({ oidcToken, owner: "octo-org", repo: "app" }) });
    const body = (await response.json()) as { token: string };
    secrets.push(body.token);
    expect(response.status).toBe(200);
  });
});

describe("POST /token repository rules", () => {
  it("403 repo_mismatch when the claim names another repository", async () => {
    const res = await exchange({}, { repo: "other" });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "repo_mismatch" });
    expect(mints()).toHaveLength(0);
  });

  it.each([
    ["other/x", 403],
    [" octo-org/app , x/y ", 200],
    ["octo-org/*", 403],
    ["octo-org/ap*", 403],
    ["*", 403],
    ["OCTO-ORG/APP", 403],
  ])("ALLOWED_REPOSITORIES=%j → %i", async (list, status) => {
    t.broker.env.ALLOWED_REPOSITORIES = list;
    const res = await exchange();
    expect(res.status).toBe(status);
    if (status === 403) expect(res.body).toEqual({ error: "repo_not_allowed" });
  });

  it("404 app_not_installed for a repository the App is not installed on", async () => {
    const res = await exchange({ repository: "octo-org/uninstalled" }, { repo: "uninstalled" });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
  });

  it("drops the cached installation when the mint answers 404", async () => {
    const extra = t.fx.sim.addInstallation({ appId: t.fx.app.id, account: "gone-org", permissions: { contents: "write", metadata: "read" }, repositories: ["lib"] });
    const claims = { repository: "gone-org/lib", repository_owner: "gone-org" };
    const body = { owner: "gone-org", repo: "lib" };
    expect((await exchange(claims, body)).status).toBe(200);
    t.fx.sim.removeInstallation(extra);
    const res = await exchange(claims, body);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "app_not_installed" });
    t.fx.sim.clearRequests();
    expect((await exchange(claims, body)).status).toBe(404);
    // Neither the dropped installation (no mint) nor a lookup: "not installed" is remembered a minute.
    expect([lookups().length, mints().length]).toEqual([0, 0]);
  });
});

describe("POST /token platform failures", () => {
  it("500 github_installation_lookup_failed when the lookup keeps failing", async () => {
    t.fx.sim.faults.add({ method: "GET", path: /\/repos\/octo-org\/app\/installation$/, respond: { status: 500, body: { message: "Server Error" } } });
    const res = await exchange();
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "github_installation_lookup_failed" });
    expect(lookups().length).toBeGreaterThan(1); // a GET is retried
  });

  it.each([
    ["garbage", "garbage" as const],
    ["an object without id", { status: 200, body: { message: "hello" } }],
    ["a 401", { status: 401, body: { message: "Bad credentials" } }],
  ])("500 github_installation_lookup_failed for %s", async (_name, respond) => {
    t.fx.sim.faults.add({ method: "GET", path: /\/installation$/, respond });
    const res = await exchange();
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: "github_installation_lookup_failed" });
  });

  it("recovers after a transient 502 on the lookup", async () => {
    t.fx.sim.faults.add({ method: "GET", path: /\/installation$/, times: 1, respond: { status: 502, body: { message: "Bad Gateway" } } });
    const res = await exchange();
    expect(res.status).toBe(200);
  });

  it("502 installation_token_failed when the mint keeps failing", async () => {
    t.fx.sim.faults.add({ method: "POST", path: /\/access_tokens$/, respond: { status: 503, body: { message: "Service Unavailable" } } });
    const res = await exchange();
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ error: "installation_token_failed" });
  });

  it("503 app_unconfigured when the App is not configured, after the token is verified", async () => {
    delete t.broker.env.HOST_APP_ID;
    const res = await exchange();
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: "app_unconfigured" });
    const bad = await exchange({ aud: "someone-else" });
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({ error: "invalid_oidc_token", reason: "audience_mismatch" });
  });

  it("503 app_unconfigured for an unreadable private key, without echoing it", async () => {
    t.broker.env.HOST_APP_PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nnot-a-key\n-----END RSA PRIVATE KEY-----";
    const res = await exchange();
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: "app_unconfigured" });
    expect(res.text).not.toContain("not-a-key");
  });
});

describe("POST /token App keys", () => {
  it("accepts a PKCS#8 key written on one line with literal \\n escapes", async () => {
    const pkcs8 = await tokenFixture({ keyFormat: "pkcs8" });
    try {
      expect(pkcs8.app.privateKeyPem).toContain("BEGIN PRIVATE KEY");
      const oneLine = pkcs8.app.privateKeyPem.trim().split("\n").join("\\n");
      const other = await startBroker({ ...pkcs8.env, HOST_APP_PRIVATE_KEY: oneLine });
      try {
        const oidcToken = await pkcs8.sim.oidc.sign();
        const res = await postJson(`${other.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
        expect(res.status).toBe(200);
        t.logs.push(...other.logs);
      } finally {
        await other.close();
      }
    } finally {
      await pkcs8.sim.close();
    }
  });

  it("accepts a PKCS#1 key with literal \\n escapes", async () => {
    expect(t.fx.app.privateKeyPem).toContain("BEGIN RSA PRIVATE KEY");
    t.broker.env.HOST_APP_PRIVATE_KEY = t.fx.app.privateKeyPem.trim().split("\n").join("\\n");
    expect((await exchange()).status).toBe(200);
  });

  it("reuses one App JWT across exchanges", async () => {
    await exchange();
    await exchange();
    await exchange();
    expect(t.broker.app.broker.appJwt.signedCount).toBe(1);
  });
});

describe("POST /token audit log", () => {
  it("writes one audit line with the token's fingerprint, never the token", async () => {
    const { body } = await exchange();
    const audit = t.broker.logs.map((l) => JSON.parse(l)).filter((l) => l.audit === "token_minted");
    expect(audit).toHaveLength(1);
    const { createHash } = await import("node:crypto");
    expect(audit[0].token_sha256).toBe(`sha256:${createHash("sha256").update(body.token as string).digest("hex")}`);
    expect(audit[0]).toMatchObject({ repository: "octo-org/app", installation_id: t.fx.installationId, actor: "octocat", sub: "repo:octo-org/app:ref:refs/heads/main" });
    expectNoSecrets(t.broker.logs, [body.token as string]);
  });
});
