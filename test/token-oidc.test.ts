// OIDC verification on POST /token: every `reason` word, the audience rules, key-set failures.
import { describe, expect, it } from "@jest/globals";
import { SignJWT, generateKeyPair } from "jose";
import { postJson, startBroker } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const secrets: string[] = [];

const t = brokerPerTest({ secrets });

const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

async function send(oidcToken: string) {
  secrets.push(oidcToken);
  const res = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

async function expectReason(oidcToken: string, reason: string) {
  const res = await send(oidcToken);
  expect(res.body).toEqual({ error: "invalid_oidc_token", reason });
  expect(res.status).toBe(401);
  const mints = t.fx.sim.requests.filter((r) => r.path.endsWith("/access_tokens"));
  expect(mints).toHaveLength(0);
}

describe("reason words", () => {
  it.each([
    ["not-a-jwt"],
    ["a.b"],
    ["!!!.###.$$$"],
    [`${b64({ alg: "RS256" })}.not-base64-json.sig`],
  ])("malformed_token for %j", async (token) => {
    await expectReason(token, "malformed_token");
  });

  it("alg_unsupported for alg none", async () => {
    const claims = { iss: t.fx.sim.oidc.issuer, aud: "tokensmith", repository: "octo-org/app", iat: now(), exp: now() + 300 };
    await expectReason(`${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.`, "alg_unsupported");
  });

  it("alg_unsupported for HS256 signed with the issuer's public key as the secret", async () => {
    const secret = new TextEncoder().encode(t.fx.sim.oidc.currentKey.publicKeyPem);
    const forged = await new SignJWT({ repository: "octo-org/app" })
      .setProtectedHeader({ alg: "HS256", kid: t.fx.sim.oidc.currentKey.kid })
      .setIssuer(t.fx.sim.oidc.issuer).setAudience("tokensmith").setIssuedAt().setExpirationTime("5m")
      .sign(secret);
    await expectReason(forged, "alg_unsupported");
  });

  it("issuer_mismatch for an untrusted issuer, without fetching anything from it", async () => {
    await expectReason(await t.fx.sim.oidc.sign({ iss: `${t.fx.sim.url}/other-issuer` }), "issuer_mismatch");
    expect(t.fx.sim.requests.some((r) => r.path.startsWith("/other-issuer"))).toBe(false);
  });

  it.each([
    ["a trailing slash", "", "/"],
    ["two trailing slashes", "", "//"],
    ["a trailing space", "", " "],
    ["a leading space", " ", ""],
    ["a trailing tab", "", "\t"],
    ["a trailing newline", "", "\n"],
  ])("issuer_mismatch for the trusted issuer with %s, signed by the issuer's own key", async (_name, before, after) => {
    await expectReason(await t.fx.sim.oidc.sign({ iss: `${before}${t.fx.sim.oidc.issuer}${after}` }), "issuer_mismatch");
  });

  it("token_lifetime_exceeded for an exp of 1e300, an exp − iat over an hour, an iat over an hour old", async () => {
    await expectReason(await t.fx.sim.oidc.sign({ exp: 1e300 }), "token_lifetime_exceeded");
    await expectReason(await t.fx.sim.oidc.sign({ iat: now() - 10, nbf: now() - 10, exp: now() + 3600 }), "token_lifetime_exceeded");
    await expectReason(await t.fx.sim.oidc.sign({ iat: now() - 365 * 86400, nbf: undefined, exp: now() + 60 }), "token_lifetime_exceeded");
    await expectReason(await t.fx.sim.oidc.sign({ iat: now() - 3700, nbf: undefined, exp: now() + 60 }), "token_lifetime_exceeded");
    const res = await send(await t.fx.sim.oidc.sign({ iat: now() - 1800, nbf: now() - 1800, exp: now() + 600 }));
    expect(res.status).toBe(200);
  });

  it("kid_not_found for a kid the issuer does not publish", async () => {
    await expectReason(await t.fx.sim.oidc.sign({}, { kid: "no-such-kid" }), "kid_not_found");
  });

  it("key_ambiguous for a token without kid when the issuer publishes several keys", async () => {
    t.fx.sim.oidc.rotateKey({ keepOld: true });
    await expectReason(await t.fx.sim.oidc.sign({}, { kid: null }), "key_ambiguous");
  });

  it("accepts a token without kid when the issuer publishes exactly one key", async () => {
    t.fx.sim.oidc.rotateKey();
    const res = await send(await t.fx.sim.oidc.sign({}, { kid: null }));
    expect(res.status).toBe(200);
  });

  it("signature_invalid for a token signed by an unknown key under a known kid", async () => {
    const { privateKey } = await generateKeyPair("RS256");
    await expectReason(await t.fx.sim.oidc.sign({}, { privateKey }), "signature_invalid");
  });

  it("signature_invalid for a payload altered after signing", async () => {
    const [h, , s] = (await t.fx.sim.oidc.sign()).split(".");
    const altered = { iss: t.fx.sim.oidc.issuer, aud: "tokensmith", repository: "octo-org/app", iat: now(), exp: now() + 300 };
    await expectReason(`${h}.${b64(altered)}.${s}`, "signature_invalid");
  });

  it("token_expired past the 60 s tolerance, accepted within it", async () => {
    await expectReason(await t.fx.sim.oidc.sign({ iat: now() - 600, nbf: now() - 600, exp: now() - 61 }), "token_expired");
    const res = await send(await t.fx.sim.oidc.sign({ iat: now() - 600, nbf: now() - 600, exp: now() - 30 }));
    expect(res.status).toBe(200);
  });

  it("token_not_yet_valid for nbf or iat in the future past 60 s, accepted within it", async () => {
    await expectReason(await t.fx.sim.oidc.sign({ nbf: now() + 120, exp: now() + 600 }), "token_not_yet_valid");
    await expectReason(await t.fx.sim.oidc.sign({ iat: now() + 120, nbf: undefined, exp: now() + 600 }), "token_not_yet_valid");
    const res = await send(await t.fx.sim.oidc.sign({ iat: now() + 30, nbf: now() + 30, exp: now() + 330 }));
    expect(res.status).toBe(200);
  });

  it("audience_mismatch for an audience not in OIDC_AUDIENCE", async () => {
    await expectReason(await t.fx.sim.oidc.sign({ aud: "https://github.com/octo-org" }), "audience_mismatch");
  });

  it.each([
    ["no aud", { aud: undefined }],
    ["an aud array without an accepted audience", { aud: ["https://github.com/octo-org", "sts.amazonaws.com"] }],
  ])("audience_mismatch for %s", async (_name, claims) => {
    await expectReason(await t.fx.sim.oidc.sign(claims as Record<string, unknown>), "audience_mismatch");
  });

  it("malformed_token for a payload that is not UTF-8, signed or not", async () => {
    const [h, , s] = (await t.fx.sim.oidc.sign()).split(".");
    await expectReason(`${h}.${Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString("base64url")}.${s}`, "malformed_token");
  });

  it.each([
    ["no repository claim", { repository: undefined }],
    ["a repository claim that is not owner/name", { repository: "octo-org" }],
    ["a numeric repository claim", { repository: 123 }],
    ["no exp", { exp: undefined }],
    ["no iat", { iat: undefined }],
    ["an exp that is a string", { exp: "2030-01-01T00:00:00Z" }],
    ["an nbf that is a string", { nbf: "now" }],
  ])("claim_invalid for %s", async (_name, claims) => {
    await expectReason(await t.fx.sim.oidc.sign(claims as Record<string, unknown>), "claim_invalid");
  });

  it("unknown for a critical header extension the broker does not understand", async () => {
    await expectReason(await t.fx.sim.oidc.sign({}, { header: { crit: ["x-ext"], "x-ext": true } }), "unknown");
  });
});

describe("OIDC_AUDIENCE", () => {
  it.each([
    [undefined, "tokensmith", 200],
    [undefined, "release-runner", 200],
    ["   ", "tokensmith", 200],
    ["   ", "release-runner", 200],
    [" foo , ,bar ", "bar", 200],
    [" foo , ,bar ", "tokensmith", 401],
    [",,", "tokensmith", 200],
    ["tokensmith", "release-runner", 401],
  ])("OIDC_AUDIENCE=%j, aud %j → %i", async (setting, aud, status) => {
    t.broker.env.OIDC_AUDIENCE = setting;
    const res = await send(await t.fx.sim.oidc.sign({ aud }));
    expect(res.status).toBe(status);
    if (status === 401) expect(res.body).toEqual({ error: "invalid_oidc_token", reason: "audience_mismatch" });
  });

  it("accepts an aud array that contains an accepted audience", async () => {
    const res = await send(await t.fx.sim.oidc.sign({ aud: ["https://github.com/octo-org", "tokensmith"] }));
    expect(res.status).toBe(200);
  });
});

describe("key set", () => {
  it.each(["fail", "hang", "garbage"] as const)("503 oidc_key_fetch_failed, reason jwks_unavailable, when the key endpoint is %s", async (mode) => {
    t.fx.sim.oidc.keyEndpoint = mode;
    const started = Date.now();
    const res = await send(await t.fx.sim.oidc.sign());
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("answers again once the key endpoint is back", async () => {
    t.fx.sim.oidc.keyEndpoint = "fail";
    expect((await send(await t.fx.sim.oidc.sign())).status).toBe(503);
    t.fx.sim.oidc.keyEndpoint = "ok";
    expect((await send(await t.fx.sim.oidc.sign())).status).toBe(200);
  });

  it("keeps verifying with the last-known-good keys in memory while the endpoint is down", async () => {
    const stale = await startBroker({ ...t.fx.env }, { timing: { jwksMaxAgeMs: 0 } });
    try {
      const first = await postJson(`${stale.url}/token`, { oidcToken: await t.fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });
      expect(first.status).toBe(200);
      t.fx.sim.oidc.keyEndpoint = "fail";
      const second = await postJson(`${stale.url}/token`, { oidcToken: await t.fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });
      expect(second.status).toBe(200);
      secrets.push(first.body.token as string, second.body.token as string);
      t.logs.push(...stale.logs);
    } finally {
      await stale.close();
    }
  });

  it("fetches the key set once for many tokens and picks up a rotated key without a restart", async () => {
    for (let i = 0; i < 3; i += 1) expect((await send(await t.fx.sim.oidc.sign())).status).toBe(200);
    expect(t.fx.sim.oidc.jwksRequests).toBe(1);
    t.fx.sim.oidc.rotateKey();
    expect((await send(await t.fx.sim.oidc.sign())).status).toBe(200);
    expect(t.fx.sim.oidc.jwksRequests).toBe(2);
  });

  it("refetches at most once per cooldown for unknown kids, answering 503 with Retry-After while it holds a refetch back", async () => {
    const guarded = await startBroker({ ...t.fx.env }, { timing: { jwksCooldownMs: 60_000 } });
    try {
      const post = async (token: string) => postJson(`${guarded.url}/token`, { oidcToken: token, owner: "octo-org", repo: "app" });
      const ok = await post(await t.fx.sim.oidc.sign());
      secrets.push(ok.body.token as string);
      const before = t.fx.sim.oidc.jwksRequests;
      for (let i = 0; i < 5; i += 1) {
        const res = await post(await t.fx.sim.oidc.sign({}, { kid: `forged-${i}` }));
        expect(res.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
        expect(res.status).toBe(503);
        const wait = Number(res.headers.get("retry-after"));
        expect(wait).toBeGreaterThanOrEqual(1);
        expect(wait).toBeLessThanOrEqual(60);
      }
      expect(t.fx.sim.oidc.jwksRequests - before).toBeLessThanOrEqual(1);
      t.logs.push(...guarded.logs);
    } finally {
      await guarded.close();
    }
  });

  it("answers 503, not a final 401, for a just-published kid whose refetch a forged kid's cooldown held back", async () => {
    let offsetMs = 0;
    const guarded = await startBroker({ ...t.fx.env }, { timing: { jwksCooldownMs: 60_000 }, now: () => Date.now() + offsetMs });
    try {
      const post = async (token: string) => {
        const res = await postJson(`${guarded.url}/token`, { oidcToken: token, owner: "octo-org", repo: "app" });
        if (typeof res.body?.token === "string") secrets.push(res.body.token);
        return res;
      };
      expect((await post(await t.fx.sim.oidc.sign())).status).toBe(200);
      offsetMs += 61_000; // the forged kid's refetch is allowed, and starts the cooldown
      const forged = await post(await t.fx.sim.oidc.sign({}, { kid: "forged" }));
      expect(forged.body).toEqual({ error: "invalid_oidc_token", reason: "kid_not_found" });

      t.fx.sim.oidc.rotateKey({ keepOld: true }); // a real job signs with the key just published
      const raced = await post(await t.fx.sim.oidc.sign());
      expect(raced.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
      expect(raced.status).toBe(503);
      expect(Number(raced.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(t.fx.sim.oidc.jwksRequests).toBe(2);

      offsetMs += 61_000; // the retry, once the cooldown is over, gets its verdict
      expect((await post(await t.fx.sim.oidc.sign())).status).toBe(200);
      expect(t.fx.sim.oidc.jwksRequests).toBe(3);
      t.logs.push(...guarded.logs);
    } finally {
      await guarded.close();
    }
  });

  it("503 with Retry-After when the key endpoint fails; a kid unknown to the last-known-good set gets no verdict", async () => {
    const stale = await startBroker({ ...t.fx.env }, { timing: { jwksMaxAgeMs: 0 } });
    try {
      const post = async (token: string) => postJson(`${stale.url}/token`, { oidcToken: token, owner: "octo-org", repo: "app" });
      const first = await post(await t.fx.sim.oidc.sign());
      expect(first.status).toBe(200);
      secrets.push(first.body.token as string);
      t.fx.sim.oidc.keyEndpoint = "fail";
      const unknown = await post(await t.fx.sim.oidc.sign({}, { kid: "not-in-the-old-set" }));
      expect(unknown.body).toEqual({ error: "oidc_key_fetch_failed", reason: "jwks_unavailable" });
      expect(unknown.status).toBe(503);
      expect(Number(unknown.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      t.logs.push(...stale.logs);
    } finally {
      await stale.close();
    }
  });

  it("never follows jku, x5u or jwk header fields", async () => {
    const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
    const { exportJWK } = await import("jose");
    const jwk = await exportJWK(publicKey);
    const header = { jku: `${t.fx.sim.url}/attacker/jwks`, x5u: `${t.fx.sim.url}/attacker/cert`, jwk };
    const res = await send(await t.fx.sim.oidc.sign({}, { privateKey, header, kid: "attacker" }));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "invalid_oidc_token", reason: "kid_not_found" });
    expect(t.fx.sim.requests.some((r) => r.path.startsWith("/attacker"))).toBe(false);
  });
});
