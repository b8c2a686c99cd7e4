// The simulator itself: every other test trusts it to behave like GitHub, so pin its behaviour.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "@jest/globals";
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { SignJWT, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import { createSimulator, linkHeader, type Simulator } from "../simulator/index.js";

let sim: Simulator;
let app: { id: number; privateKeyPem: string };
let appKey: KeyObject;
let installationId: number;

beforeAll(async () => {
  sim = await createSimulator();
  app = sim.createApp();
  appKey = createPrivateKey(app.privateKeyPem);
  installationId = sim.addInstallation({
    appId: app.id,
    account: "octo-org",
    permissions: { contents: "write", issues: "read", metadata: "read" },
    repositories: ["app", "other"],
  });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.clearRequests();
  sim.faults.clear();
  sim.oidc.keyEndpoint = "ok";
  sim.latencyMs = 0;
});

const now = () => Math.floor(Date.now() / 1000);

async function appJwt(claims: { iat?: number; exp?: number; iss?: string | number } = {}, key: KeyObject = appKey): Promise<string> {
  const iat = claims.iat ?? now() - 30;
  return new SignJWT({})
    .setProtectedHeader({ alg: "RS256" })
    .setIssuer(String(claims.iss ?? app.id))
    .setIssuedAt(iat)
    .setExpirationTime(claims.exp ?? iat + 600)
    .sign(key);
}

async function call(method: string, path: string, options: { auth?: string; body?: unknown; base?: string; signal?: AbortSignal; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${options.base ?? sim.apiBase}${path}`, {
    method,
    headers: { ...(options.auth ? { authorization: options.auth } : {}), ...(options.body ? { "content-type": "application/json" } : {}), ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: options.signal,
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* keep the raw text */
  }
  return { status: res.status, headers: res.headers, body, text };
}

const mint = async (body?: unknown) => call("POST", `/app/installations/${installationId}/access_tokens`, { auth: `Bearer ${await appJwt()}`, body });

describe("OIDC issuer", () => {
  it("serves discovery and a JWKS with the current RSA key", async () => {
    const discovery = await call("GET", "/.well-known/openid-configuration", { base: sim.oidc.issuer });
    expect(sim.oidc.issuer).toBe(`${sim.url}/oidc`);
    expect(discovery.status).toBe(200);
    expect(discovery.body).toMatchObject({
      issuer: sim.oidc.issuer,
      jwks_uri: `${sim.oidc.issuer}/.well-known/jwks`,
      subject_types_supported: ["public", "pairwise"],
      response_types_supported: ["id_token"],
      id_token_signing_alg_values_supported: ["RS256"],
      scopes_supported: ["openid"],
    });
    expect(discovery.body.claims_supported).toContain("repository_id");
    const jwks = await call("GET", "/.well-known/jwks", { base: sim.oidc.issuer });
    expect(jwks.body.keys).toEqual([{ kty: "RSA", alg: "RS256", use: "sig", kid: sim.oidc.currentKey.kid, n: expect.any(String), e: "AQAB" }]);
    expect(sim.oidc.jwksRequests).toBe(1);
  });

  it("signs GitHub-shaped tokens that verify against the remote JWKS", async () => {
    const token = await sim.oidc.sign({ ref: "refs/heads/dev", actor: undefined });
    const jwks = createRemoteJWKSet(new URL(`${sim.oidc.issuer}/.well-known/jwks`));
    const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: sim.oidc.issuer, audience: "tokensmith" });
    expect(protectedHeader).toEqual({ alg: "RS256", typ: "JWT", kid: sim.oidc.currentKey.kid });
    expect(payload).toMatchObject({ repository: "octo-org/app", repository_id: "123456", repository_owner_id: "654321", ref: "refs/heads/dev" });
    expect(payload).not.toHaveProperty("actor");
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(payload.sha).toMatch(/^[0-9a-f]{40}$/);
  });

  it("builds sub from the job's claims, classic or immutable per repository (and the option)", async () => {
    const sub = async (claims: Record<string, unknown>) => decodeJwt(await sim.oidc.sign(claims)).sub;
    expect(await sub({})).toBe("repo:octo-org/app:ref:refs/heads/main");
    expect(await sub({ repository: "octo-org/other", ref: "refs/tags/v1" })).toBe("repo:octo-org/other:ref:refs/tags/v1");
    expect(await sub({ environment: "production" })).toBe("repo:octo-org/app:environment:production");
    expect(await sub({ event_name: "pull_request", ref: "refs/pull/7/merge" })).toBe("repo:octo-org/app:pull_request");
    expect(await sub({ sub: "repo:set/by:the-test" })).toBe("repo:set/by:the-test");
    const other = sim.repository("octo-org", "other");
    other.subjectFormat = "immutable";
    try {
      expect(await sub({ repository: "octo-org/other" })).toBe(`repo:octo-org@654321/other@${other.id}:ref:refs/heads/main`);
      expect(await sub({})).toBe("repo:octo-org/app:ref:refs/heads/main"); // only the marked repository
      sim.subjectFormat = "immutable";
      expect(await sub({ environment: "production" })).toBe("repo:octo-org@654321/app@123456:environment:production");
    } finally {
      delete other.subjectFormat;
      sim.subjectFormat = "classic";
    }
    const immutable = await createSimulator({ subjectFormat: "immutable" });
    try {
      expect(decodeJwt(await immutable.oidc.sign({})).sub).toBe("repo:octo-org@654321/app@123456:ref:refs/heads/main");
    } finally {
      await immutable.close();
    }
  });

  it("honours kid: null, extra header fields and rotation", async () => {
    expect(decodeProtectedHeader(await sim.oidc.sign({}, { kid: null }))).not.toHaveProperty("kid");
    expect(decodeProtectedHeader(await sim.oidc.sign({}, { header: { jku: "http://x" } }))).toMatchObject({ jku: "http://x" });
    const old = sim.oidc.currentKey.kid;
    sim.oidc.rotateKey({ keepOld: true });
    expect(sim.oidc.keys.map((k) => k.kid)).toEqual([sim.oidc.currentKey.kid, old]);
    sim.oidc.rotateKey();
    expect(sim.oidc.keys).toHaveLength(1);
    const jwks = await call("GET", "/.well-known/jwks", { base: sim.oidc.issuer });
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toEqual([sim.oidc.currentKey.kid]);
  });

  it.each([
    ["fail", 503],
    ["garbage", 200],
  ] as Array<["fail" | "garbage", number]>)("keyEndpoint %s breaks discovery and JWKS", async (mode, status) => {
    sim.oidc.keyEndpoint = mode;
    for (const doc of ["/.well-known/openid-configuration", "/.well-known/jwks"]) {
      const res = await call("GET", doc, { base: sim.oidc.issuer });
      expect(res.status).toBe(status);
      if (mode === "garbage") expect(res.text).toBe("not json{");
    }
  });

  it("keyEndpoint hang never answers", async () => {
    sim.oidc.keyEndpoint = "hang";
    await expect(call("GET", "/.well-known/jwks", { base: sim.oidc.issuer, signal: AbortSignal.timeout(300) })).rejects.toThrow();
    expect(sim.oidc.jwksRequests).toBe(1);
  });

  it("serves the Actions runner ID-token endpoint", async () => {
    sim.actions.claims = { ref: "refs/tags/v1" };
    const res = await fetch(`${sim.actions.requestUrl}&audience=tokensmith`, { headers: { authorization: `Bearer ${sim.actions.requestToken}` } });
    expect(res.status).toBe(200);
    const { value } = (await res.json()) as { value: string };
    const { payload } = await jwtVerify(value, createRemoteJWKSet(new URL(sim.oidc.jwksUri)), { audience: "tokensmith" });
    expect(payload.ref).toBe("refs/tags/v1");
    const denied = await fetch(sim.actions.requestUrl, { headers: { authorization: "Bearer wrong" } });
    expect(denied.status).toBe(401);
    expect(await denied.json()).toEqual({ message: "Unauthorized" });
    sim.actions.claims = {};
  });
});

describe("App JWT authentication", () => {
  it("finds the repository installation with a good JWT", async () => {
    const res = await call("GET", "/repos/octo-org/app/installation", { auth: `Bearer ${await appJwt()}` });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.body).toMatchObject({ id: installationId, app_id: app.id, account: { login: "octo-org", id: 654321, type: "Organization" }, repository_selection: "selected", permissions: { contents: "write" }, events: [] });
    expect(sim.requests[0]!.auth).toEqual({ kind: "app", appId: String(app.id) });
  });

  it("404s for a repository the App is not installed on", async () => {
    const res = await call("GET", "/repos/octo-org/nope/installation", { auth: `bearer ${await appJwt()}` });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: "Not Found", documentation_url: "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app", status: "404" });
  });

  it.each([
    ["a wrong key", () => appJwt({}, generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey), "A JSON web token could not be decoded"],
    ["exp - iat > 600", () => appJwt({ iat: now() - 10, exp: now() + 600 }), "'Expiration time' claim ('exp') is too far in the future"],
    ["an expired JWT", () => appJwt({ iat: now() - 700, exp: now() - 100 }), "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"],
    ["an unknown App", () => appJwt({ iss: 999 }), "Integration not found"],
    ["no JWT at all", async () => "not-a-jwt", "A JSON web token could not be decoded"],
  ])("401 for %s", async (_name, jwt, message) => {
    const res = await call("GET", "/repos/octo-org/app/installation", { auth: `Bearer ${await jwt()}` });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message, documentation_url: "https://docs.github.com/rest" });
  });
});

describe("installation tokens", () => {
  it("mints 201 with GitHub's shape and records the token", async () => {
    const res = await mint({ repositories: ["app"], permissions: { contents: "read" } });
    expect(res.status).toBe(201);
    expect(res.body.token).toMatch(/^ghs_[A-Za-z0-9._]{36,}$/);
    expect(res.body.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(res.body).toMatchObject({ permissions: { contents: "read" }, repository_selection: "selected", repositories: [{ name: "app", full_name: "octo-org/app", id: 123456, private: true, owner: { login: "octo-org" } }] });
    const issued = sim.tokens.get(res.body.token)!;
    expect(issued).toMatchObject({ installationId, permissions: { contents: "read" }, repositories: ["app"], revoked: false });
    expect(Math.abs(issued.expiresAt.getTime() - Date.now() - 3_600_000)).toBeLessThan(5_000);
  });

  it("grants everything the installation holds when no permissions are asked for", async () => {
    const res = await mint();
    expect(res.body.permissions).toEqual({ contents: "write", issues: "read", metadata: "read" });
    expect(sim.tokens.get(res.body.token)!.repositories).toEqual(["app", "other"]);
  });

  it.each([
    ["a permission the installation lacks", { permissions: { actions: "read" } }, "The permissions requested are not granted to this installation."],
    ["write where it holds read", { permissions: { issues: "write" } }, "The permissions requested are not granted to this installation."],
    ["a repository it cannot reach", { repositories: ["secret"] }, "There is at least one repository that does not exist or is not accessible to the parent installation."],
    ["owner/name instead of a name", { repositories: ["octo-org/app"] }, "There is at least one repository that does not exist or is not accessible to the parent installation."],
  ])("422 for %s", async (_name, body, message) => {
    const res = await mint(body);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ message, status: "422" });
  });

  it("422 for an invalid permission value, 404 for an unknown installation", async () => {
    expect((await mint({ permissions: { contents: "delete" } })).status).toBe(422);
    expect((await call("POST", "/app/installations/1/access_tokens", { auth: `Bearer ${await appJwt()}` })).status).toBe(404);
  });

  it("serves the token's repositories, then 401s once it is revoked", async () => {
    const { body } = await mint({ repositories: ["other"] });
    const repos = await call("GET", "/installation/repositories", { auth: `token ${body.token}` });
    expect(repos.body).toMatchObject({ total_count: 1, repository_selection: "selected", repositories: [{ full_name: "octo-org/other" }] });
    expect((await call("GET", "/repos/octo-org/other", { auth: `token ${body.token}` })).status).toBe(200);
    expect((await call("GET", "/repos/octo-org/app", { auth: `token ${body.token}` })).status).toBe(404);
    expect((await call("DELETE", "/installation/token", { auth: `Bearer ${body.token}` })).status).toBe(204);
    expect(sim.tokens.get(body.token)!.revoked).toBe(true);
    const after = await call("GET", "/installation/repositories", { auth: `token ${body.token}` });
    expect(after.status).toBe(401);
    expect(after.body).toEqual({ message: "Bad credentials", documentation_url: "https://docs.github.com/rest" });
  });

  it("mints stateless tokens by default (ghs_<app id>_<JWT>, ~520 characters, two dots), each unique", async () => {
    const tokens = await Promise.all([mint(), mint(), mint()]).then((answers) => answers.map((a) => a.body.token as string));
    expect(new Set(tokens).size).toBe(3);
    for (const token of tokens) {
      expect(token).toMatch(new RegExp(`^ghs_${app.id}_eyJ[A-Za-z0-9_]+\\.eyJ[A-Za-z0-9_]+\\.[A-Za-z0-9_]+$`));
      expect(token).toMatch(/^ghs_[A-Za-z0-9._]{36,}$/); // GitHub's published pattern
      expect(token.length).toBeGreaterThanOrEqual(500);
      expect(token.length).toBeLessThanOrEqual(560);
      const header = JSON.parse(Buffer.from(token.split("_")[2]!.split(".")[0]!, "base64url").toString()) as unknown;
      expect(header).toEqual({ alg: "RS256", typ: "JWT" });
    }
  });

  it("mints classic tokens (ghs_ + 36 base62) when set to, and either format on GitHub's per-request header", async () => {
    sim.tokenFormat = "classic";
    try {
      const classic = (await mint()).body.token as string;
      expect(classic).toMatch(/^ghs_[A-Za-z0-9]{36}$/);
      const forced = await call("POST", `/app/installations/${installationId}/access_tokens`, { auth: `Bearer ${await appJwt()}`, headers: { "x-github-stateless-s2s-token": "enabled" } });
      expect((forced.body.token as string).length).toBeGreaterThanOrEqual(500);
    } finally {
      sim.tokenFormat = "stateless";
    }
    const disabled = await call("POST", `/app/installations/${installationId}/access_tokens`, { auth: `Bearer ${await appJwt()}`, headers: { "x-github-stateless-s2s-token": "disabled" } });
    expect(disabled.body.token).toMatch(/^ghs_[A-Za-z0-9]{36}$/);
    const ignored = await call("POST", `/app/installations/${installationId}/access_tokens`, { auth: `Bearer ${await appJwt()}`, headers: { "x-github-stateless-s2s-token": "true" } });
    expect((ignored.body.token as string).length).toBeGreaterThanOrEqual(500);
  });

  it("takes the format as an option", async () => {
    const other = await createSimulator({ tokenFormat: "classic" });
    try {
      const a = other.createApp();
      const id = other.addInstallation({ appId: a.id, account: "octo-org", permissions: { metadata: "read" }, repositories: "all" });
      expect(other.issueToken(id)).toMatch(/^ghs_[A-Za-z0-9]{36}$/);
    } finally {
      await other.close();
    }
  });
});

describe("REST API versions", () => {
  it("answers a request naming no version (recorded as null) or a supported one, GitHub's 400 for any other", async () => {
    const token = sim.issueToken(installationId, { repositories: ["app"] });
    const get = (headers: Record<string, string>) => call("GET", "/repos/octo-org/app", { auth: `token ${token}`, headers });
    expect((await get({})).status).toBe(200);
    expect((await get({ "x-github-api-version": "2022-11-28" })).status).toBe(200);
    expect((await get({ "x-github-api-version": "2026-03-10" })).status).toBe(200);
    const refused = await get({ "x-github-api-version": "v3" });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      message: "Bad Request",
      errors: 'The version you specified in the "X-GitHub-API-Version" request header, "v3", is not a supported version. The following versions are currently supported: "2026-03-10" (most recent) and "2022-11-28".',
      documentation_url: "https://docs.github.com/rest",
      status: "400",
    });
    expect(sim.requests.map((r) => r.apiVersion)).toEqual([null, "2022-11-28", "2026-03-10", "v3"]);
  });

  it("judges REST only: the OIDC issuer, the runner's endpoint and GraphQL record no version", async () => {
    const headers = { "x-github-api-version": "v3" };
    expect((await call("GET", "/.well-known/jwks", { base: sim.oidc.issuer, headers })).status).toBe(200);
    const graphql = await fetch(sim.graphqlUrl, { method: "POST", headers: { ...headers, authorization: `bearer ${sim.issueToken(installationId)}` }, body: JSON.stringify({ query: '{ repository(owner: "octo-org", name: "app") { name } }' }) });
    expect(graphql.status).toBe(200);
    expect(sim.requests.map((r) => r.apiVersion)).toEqual([undefined, undefined]);
  });
});

describe("pagination", () => {
  it("pages /app/installations with a Link header", async () => {
    const other = await createSimulator();
    try {
      const a = other.createApp({ keyFormat: "pkcs8" });
      expect(a.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
      for (let i = 0; i < 5; i += 1) other.addInstallation({ appId: a.id, account: `org-${i}`, permissions: { metadata: "read" }, repositories: "all" });
      const jwt = await appJwt({ iss: a.id }, createPrivateKey(a.privateKeyPem));
      const res = await call("GET", "/app/installations?per_page=2&page=2", { base: other.apiBase, auth: `Bearer ${jwt}` });
      expect(res.body.map((i: { account: { login: string } }) => i.account.login)).toEqual(["org-2", "org-3"]);
      const base = `${other.apiBase}/app/installations`;
      expect(res.headers.get("link")).toBe(
        `<${base}?per_page=2&page=1>; rel="prev", <${base}?per_page=2&page=3>; rel="next", <${base}?per_page=2&page=3>; rel="last", <${base}?per_page=2&page=1>; rel="first"`,
      );
    } finally {
      await other.close();
    }
  });

  it("linkHeader omits the header for a single page", () => {
    expect(linkHeader("http://x/y", 1, 30, 10)).toBeUndefined();
    expect(linkHeader("http://x/y", 1, 30, 31)).toBe('<http://x/y?per_page=30&page=2>; rel="next", <http://x/y?per_page=30&page=2>; rel="last"');
  });
});

describe("faults, latency and the catch-all", () => {
  it("answers a fault's status `times` times, then the real route", async () => {
    sim.faults.add({ method: "GET", path: /\/installation$/, times: 1, respond: { status: 502, body: { message: "Bad Gateway" } } });
    const auth = `Bearer ${await appJwt()}`;
    expect((await call("GET", "/repos/octo-org/app/installation", { auth })).status).toBe(502);
    expect((await call("GET", "/repos/octo-org/app/installation", { auth })).status).toBe(200);
  });

  it("hangs, answers garbage or resets on request", async () => {
    const hang = sim.faults.add({ path: "/repos/octo-org/app/installation", respond: "hang" });
    await expect(call("GET", "/repos/octo-org/app/installation", { signal: AbortSignal.timeout(300) })).rejects.toThrow();
    hang.remove();
    sim.faults.add({ path: "/app/installations", respond: "garbage" });
    const garbage = await call("GET", "/app/installations");
    expect([garbage.status, garbage.text]).toEqual([200, "<<not json"]);
    sim.faults.add({ path: "/installation/token", respond: "reset" });
    await expect(call("DELETE", "/installation/token")).rejects.toThrow();
  });

  it("adds latency to every answer", async () => {
    sim.latencyMs = 150;
    const started = Date.now();
    await call("GET", "/.well-known/jwks", { base: sim.oidc.issuer });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it("501s anything not implemented and takes new routes", async () => {
    expect(await call("GET", "/repos/octo-org/app/issues")).toMatchObject({ status: 501, body: { message: "simulator: not implemented: GET /repos/octo-org/app/issues" } });
    sim.route("GET", "/repos/:owner/:repo/issues", (ctx) => ({ status: 200, body: [{ owner: ctx.params.owner, page: ctx.query.page }] }));
    expect((await call("GET", "/repos/octo-org/app/issues?page=2")).body).toEqual([{ owner: "octo-org", page: "2" }]);
  });
});

describe("enterprise flavor", () => {
  it("serves REST under /api/v3 and OIDC under /_services/token", async () => {
    const ent = await createSimulator({ flavor: "enterprise" });
    try {
      expect([ent.apiBase, ent.graphqlUrl, ent.oidc.issuer]).toEqual([`${ent.url}/api/v3`, `${ent.url}/api/graphql`, `${ent.url}/_services/token`]);
      expect(ent.oidc.currentKey.kid).not.toBe(sim.oidc.currentKey.kid);
      const entApp = ent.createApp();
      ent.addInstallation({ appId: entApp.id, account: "octo-org", permissions: { contents: "read" }, repositories: ["app"] });
      const jwt = await appJwt({ iss: entApp.id }, createPrivateKey(entApp.privateKeyPem));
      expect((await call("GET", "/repos/octo-org/app/installation", { base: ent.apiBase, auth: `Bearer ${jwt}` })).status).toBe(200);
      expect((await call("GET", "/repos/octo-org/app/installation", { base: ent.url, auth: `Bearer ${jwt}` })).status).toBe(501);
      // The same description judges bodies under /api/v3.
      const entInstallation = [...ent.installations.values()][0]!.id;
      const refused = await call("POST", `/app/installations/${entInstallation}/access_tokens`, { base: ent.apiBase, auth: `Bearer ${jwt}`, body: { permissions: { contents: "admin" } } });
      expect(refused.status).toBe(422);
      expect(refused.body.message).toBe(`Invalid request.\n\nFor 'properties/contents', admin is not a member of ["read", "write"].`);
      const jwks = await call("GET", "/.well-known/jwks", { base: ent.oidc.issuer });
      expect(jwks.body.keys[0].kid).toBe(ent.oidc.currentKey.kid);
    } finally {
      await ent.close();
    }
  });
});

describe("GraphQL endpoint", () => {
  const gql = async (query: string, auth?: string, variables?: Record<string, unknown>) => {
    const res = await fetch(sim.graphqlUrl, {
      method: "POST",
      headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown> | null; errors?: Array<Record<string, unknown>> } };
  };

  it("answers 401 without credentials and to an App JWT", async () => {
    expect((await gql("{ rateLimit { remaining } }")).status).toBe(401);
    expect((await gql("{ rateLimit { remaining } }", `Bearer ${await appJwt()}`)).status).toBe(401);
  });

  it("resolves a repository the installation token covers, with GitHub's names", async () => {
    const token = sim.issueToken(installationId, { repositories: ["app"] });
    const res = await gql("query($o: String!, $n: String!) { repository(owner: $o, name: $n) { name nameWithOwner owner { login } isPrivate } }", `token ${token}`, { o: "octo-org", n: "app" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { repository: { name: "app", nameWithOwner: "octo-org/app", owner: { login: "octo-org" }, isPrivate: true } } });
  });

  it("answers NOT_FOUND inside a 200 for a repository the token does not cover", async () => {
    const token = sim.issueToken(installationId, { repositories: ["app"] });
    const res = await gql('{ repository(owner: "octo-org", name: "other") { name } }', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ repository: null });
    expect(res.body.errors?.[0]).toMatchObject({ type: "NOT_FOUND", path: ["repository"], message: "Could not resolve to a Repository with the name 'octo-org/other'." });
  });

  it("answers validation and parse errors inside a 200 with no data", async () => {
    const token = sim.issueToken(installationId);
    const unknownField = await gql('{ repository(owner: "octo-org", name: "app") { nope } }', `Bearer ${token}`);
    expect(unknownField.status).toBe(200);
    expect(unknownField.body.errors?.[0]?.message).toMatch(/nope/);
    expect(unknownField.body.data).toBeUndefined();
    const broken = await gql("{ repository(", `Bearer ${token}`);
    expect(broken.status).toBe(200);
    expect(broken.body.errors).toHaveLength(1);
  });

  it("takes Repository fields and mutations from feature modules", async () => {
    sim.graphql.extendRepository((repo) => ({ latestRelease: () => ({ tagName: `v-${repo.name}`, name: "n", url: "u", isDraft: false, isPrerelease: false, isLatest: true, createdAt: "2026-01-01T00:00:00Z", id: "x" }) }));
    const token = sim.issueToken(installationId);
    const res = await gql('{ repository(owner: "octo-org", name: "app") { latestRelease { tagName } } }', `Bearer ${token}`);
    expect(res.body).toEqual({ data: { repository: { latestRelease: { tagName: "v-app" } } } });
  });
});

describe("secondary limits: REST and GraphQL points are separate budgets", () => {
  it("GraphQL spends none of REST's points; its own budget charges a query 1 and a mutation 5", async () => {
    const token = sim.issueToken(installationId);
    const values = { ...sim.limits.values };
    const refused = { ...sim.limits.refused };
    sim.limits.forgetSpentPoints();
    sim.limits.values.pointsPerMinute = 2;
    sim.limits.values.graphqlPointsPerMinute = 7;
    try {
      const post = (query: string) =>
        fetch(sim.graphqlUrl, { method: "POST", headers: { authorization: `token ${token}`, "content-type": "application/json" }, body: JSON.stringify({ query }) });
      const rest = () => fetch(`${sim.apiBase}/installation/repositories`, { headers: { authorization: `token ${token}` } });
      // 1 + 5 = 6 of GraphQL's 7; REST's 2 untouched.
      expect((await post('{ repository(owner: "octo-org", name: "app") { name } }')).status).toBe(200);
      // A mutation the simulator does not implement is answered 501, after its points were counted.
      expect((await post("# a comment\nmutation { nothing }")).status).not.toBe(403);
      expect((await rest()).status).toBe(200);
      expect((await rest()).status).toBe(200);
      expect((await rest()).status).toBe(403); // REST's 2 spent
      expect((await post("mutation { nothing }")).status).toBe(403); // 6 + 5 > 7
      expect((await post('{ repository(owner: "octo-org", name: "app") { name } }')).status).toBe(200); // 6 + 1 = 7
      expect(sim.limits.refused.points - refused.points).toBe(1);
      expect(sim.limits.refused.graphqlPoints - refused.graphqlPoints).toBe(1);
    } finally {
      Object.assign(sim.limits.values, values);
      sim.limits.forgetSpentPoints();
    }
  });
});

describe("no friendlier than GitHub's published descriptions", () => {
  const DOC_MINT = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app";
  const invalid = (detail: string) => `Invalid request.\n\n${detail}`;

  it("refuses a level the platform does not offer (workflows: read) even where the installation holds write", async () => {
    const ci = sim.addInstallation({ appId: app.id, account: "octo-ci", permissions: { contents: "read", workflows: "write" }, repositories: ["ci"] });
    const mintOn = async (body: unknown) => call("POST", `/app/installations/${ci}/access_tokens`, { auth: `Bearer ${await appJwt()}`, body });
    const refused = await mintOn({ permissions: { workflows: "read" } });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ message: invalid(`For 'properties/workflows', read is not a member of ["write"].`), documentation_url: DOC_MINT, status: "422" });
    expect((await mintOn({ permissions: { workflows: "write" } })).status).toBe(201);
  });

  it.each([
    ["a name where a list is described", { repositories: "app" }, `For 'properties/repositories', "app" is not an array.`],
    ["a string id", { repository_ids: ["123456"] }, `For 'items', "123456" is not an integer.`],
    ["a level that is no level", { permissions: { contents: "delete" } }, `For 'properties/contents', delete is not a member of ["read", "write"].`],
    ["permissions as a list", { permissions: ["contents"] }, `For 'properties/permissions', ["contents"] is not an object.`],
  ])("422 Invalid request for %s, before any token is issued", async (_name, body, detail) => {
    const before = sim.tokens.size;
    const res = await mint(body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ message: invalid(detail), documentation_url: DOC_MINT, status: "422" });
    expect(sim.tokens.size).toBe(before);
  });

  it("400 Problems parsing JSON for a body that is not JSON; 401 before any body check", async () => {
    const notJson = await fetch(`${sim.apiBase}/app/installations/${installationId}/access_tokens`, { method: "POST", headers: { authorization: `Bearer ${await appJwt()}` }, body: "{nope" });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toEqual({ message: "Problems parsing JSON", documentation_url: DOC_MINT, status: "400" });
    const anonymous = await call("POST", `/app/installations/${installationId}/access_tokens`, { body: { repositories: "app" } });
    expect(anonymous.status).toBe(401);
  });

  it("update-branch refuses an expected_head_sha that is not a string, and leaves the branch alone", async () => {
    sim.git.createBranch("octo-org/app", "main", { files: { "a.txt": "a" } });
    sim.git.createBranch("octo-org/app", "topic", { files: { "a.txt": "a" } });
    const number = sim.git.addPullRequest("octo-org/app", { base: "main", head: "topic" });
    sim.git.push("octo-org/app", "main", { files: { "b.txt": "b" } });
    const token = sim.issueToken(installationId, { permissions: { pull_requests: "write" }, repositories: ["app"] });
    const head = sim.git.head("octo-org/app", "topic");
    const res = await call("PUT", `/repos/octo-org/app/pulls/${number}/update-branch`, { auth: `token ${token}`, body: { expected_head_sha: 123 } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      message: invalid(`For 'properties/expected_head_sha', 123 is not a string.`),
      documentation_url: "https://docs.github.com/rest/pulls/pulls#update-a-pull-request-branch",
      status: "422",
    });
    expect(sim.git.head("octo-org/app", "topic")).toBe(head);
  });

  describe("GraphQL", () => {
    const gql = async (query: string, token: string) => {
      const res = await fetch(sim.graphqlUrl, { method: "POST", headers: { "content-type": "application/json", authorization: `bearer ${token}` }, body: JSON.stringify({ query }) });
      return { status: res.status, body: (await res.json()) as { data?: unknown; errors?: Array<Record<string, unknown>>; message?: string } };
    };

    it("words an unknown field as GitHub does, with its code, and answers no data", async () => {
      const res = await gql('{ repository(owner: "octo-org", name: "app") { nope } }', sim.issueToken(installationId));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        errors: [{ extensions: { code: "undefinedField", typeName: "Repository", fieldName: "nope" }, locations: [{ line: 1, column: 48 }], message: "Field 'nope' doesn't exist on type 'Repository'" }],
      });
    });

    it("answers a signed commit's signature as GitHub's GitSignature interface, every non-null field resolved", async () => {
      sim.git.createBranch("octo-org/app", "signed", { files: { "a.txt": "a" } });
      const token = sim.issueToken(installationId, { permissions: { contents: "write" }, repositories: ["app"] });
      const head = sim.git.head("octo-org/app", "signed")!;
      const mutation = `mutation { createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "octo-org/app", branchName: "signed"}, expectedHeadOid: "${head}", message: {headline: "x"}, fileChanges: {additions: [{path: "b.txt", contents: "Yg=="}]}}) {
        commit { signature { __typename email isValid payload signature state wasSignedByGitHub ... on GpgSignature { keyId } } } } }`;
      const res = await gql(mutation, token);
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data).toMatchObject({ createCommitOnBranch: { commit: { signature: { __typename: "GpgSignature", isValid: true, state: "VALID", wasSignedByGitHub: true, email: "noreply@github.com" } } } });
    });

    it("501s a document GitHub accepts but the simulator does not implement, rather than answering nulls", async () => {
      const res = await gql('{ repository(owner: "octo-org", name: "app") { description } }', sim.issueToken(installationId));
      expect(res.status).toBe(501);
      expect(res.body.message).toMatch(/^simulator: not implemented in GraphQL: .*description/);
    });
  });
});
