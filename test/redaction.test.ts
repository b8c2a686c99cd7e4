// Upstream text copied into logs is redacted (security review item 11): the shapes table, then
// over HTTP the simulator answering errors that echo a token, a JWT and a key, and the broker's
// log lines holding none of them.
import { describe, expect, it } from "@jest/globals";
import { redactDeep, redactSecrets } from "../server/log.js";
import { pushAudit, sendPush } from "./support/push-audit.js";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { INSTALLED_PERMISSIONS } from "./support/fixtures.js";
import { findSecret } from "./support/log-scan.js";

const GHS = `ghs_${"A1b2C3d4E5".repeat(4)}`;
/** A stateless installation token (`ghs_<app id>_<JWT>`, ~520 characters, two dots), as the simulator mints by default. */
const STATELESS = `ghs_100001_eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiIxMDAwMDEiLCJzdWIiOiI1MDAwMDAwMSJ9.${"Zm9v_YmFy".repeat(34)}`;
const GHP = `ghp_${"z9Y8x7W6v5".repeat(4)}`;
const PAT = `github_pat_11ABCDEFG0${"abcdefghij".repeat(6)}`;
const V1 = `v1.${"0123456789abcdef".repeat(2)}01234567`;
const JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOm8vcjpyZWYifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
const PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----";

describe("redactSecrets", () => {
  it.each([
    ["a ghs_ installation token", `Bad credentials: token ${GHS}.`, "Bad credentials: token [redacted]."],
    ["ghu_, gho_, ghp_", `a ghu_${"x".repeat(36)} b gho_${"y".repeat(36)} c ${GHP}`, "a [redacted] b [redacted] c [redacted]"],
    ["a fine-grained PAT", `pat=${PAT}`, "pat=[redacted]"],
    ["a v1. installation token", `token ${V1} expired`, "token [redacted] expired"],
    ["a JWT", `jwt ${JWT}!`, "jwt [redacted]!"],
    ["a JWT cut short by a length limit", `jwt ${JWT.slice(0, 40)}`, "jwt [redacted]"],
    ["a JWT's header alone", `jwt ${JWT.split(".")[0]}`, "jwt [redacted]"],
    ["a PEM block", `key: ${PEM} end`, "key: [redacted] end"],
    ["a PEM block cut short", `key: ${PEM.slice(0, 45)}`, "key: [redacted]"],
    ["a Bearer value", "Authorization: Bearer sEcReT-vAlUe.123", "Authorization: Bearer [redacted]"],
    ["a URL whose password holds an unencoded @", "issuer https://ci:p@ss@ghes.test/_services/token down", "issuer https://[redacted]@ghes.test/_services/token down"],
    ["an ordinary message", "Resource not accessible by integration", "Resource not accessible by integration"],
    ["a commit SHA and a version", "v1.2.3 at 0123456789abcdef0123456789abcdef01234567", "v1.2.3 at 0123456789abcdef0123456789abcdef01234567"],
    ["a short ghs_ word", "ghs_ prefix", "ghs_ prefix"],
    ["a stateless ghs_ token, its full stop kept", `Bad credentials: token ${STATELESS}.`, "Bad credentials: token [redacted]."],
    ["a stateless token in a header echo", `authorization: token ${STATELESS}, next`, "authorization: token [redacted], next"],
  ])("%s", (_name, text, expected) => {
    expect(redactSecrets(text)).toBe(expected);
    expect(findSecret(redactSecrets(text))).toBeUndefined();
  });

  it("reaches strings inside objects and arrays, cycles included", () => {
    const value: Record<string, unknown> = { a: [GHS, { b: JWT }], n: 1 };
    value.self = value;
    expect(redactDeep(value)).toEqual({ a: ["[redacted]", { b: "[redacted]" }], n: 1, self: "[…]" });
  });
});

const TRIGGER = "redaction-trigger-secret-0123-012345";
const HOOK = "redaction-webhook-secret-4567-012345";
const ACCOUNT = "redact-org";
let installationId: number;
let counter = 0;
const ECHO = `Bad credentials (sent: Authorization: token ${GHS}; Bearer ${JWT}; key ${PEM})`;

const t = brokerPerTest({
  secrets: [TRIGGER, HOOK, GHS, JWT, PEM],
  env: { PROCESS_TRIGGER_SECRET: TRIGGER, HOST_WEBHOOK_SECRET: HOOK, AUTO_UPDATE_BRANCHES: "on" },
  setup: (fx) => {
    installationId = fx.sim.addInstallation({ appId: fx.app.id, account: ACCOUNT, permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
  },
});

/** The broker's lines holding a field, none holding a credential. */
function expectRedacted(field: string): void {
  const lines = t.broker.logs.filter((line) => line.includes(`"${field}"`));
  expect(lines.length).toBeGreaterThan(0);
  for (const line of t.broker.logs) {
    expect(findSecret(line, [GHS, JWT, PEM])).toBeUndefined();
    expect(line).not.toContain("MIIEowIBAAKCAQEA");
  }
  expect(lines.some((line) => line.includes("[redacted]"))).toBe(true);
}

function signBody() {
  const branch = `redact-${++counter}`;
  const head = t.fx.sim.git.createBranch("octo-org/app", branch, { files: { VERSION: "1\n" } });
  return { repo: "octo-org/app", branch, expected_head_oid: head, message: { headline: "release" }, additions: [{ path: "VERSION", contents: Buffer.from("2\n").toString("base64") }] };
}

describe("upstream text in the broker's logs", () => {
  it("/sign: GraphQL error messages (platform_errors, and the error handler's detail)", async () => {
    t.fx.sim.faults.add({ method: "POST", path: "/graphql", respond: { status: 200, body: { data: null, errors: [{ type: "FORBIDDEN", message: ECHO }] } } });
    const res = await postJson(`${t.broker.url}/sign`, signBody(), { authorization: `Bearer ${TRIGGER}` });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ error: "sign_failed" });
    expectRedacted("platform_errors");
    expectRedacted("detail");
  });

  it("/sign: an HTTP error's message (platform_message)", async () => {
    t.fx.sim.faults.add({ method: "POST", path: "/graphql", respond: { status: 502, body: { message: ECHO } } });
    const res = await postJson(`${t.broker.url}/sign`, signBody(), { authorization: `Bearer ${TRIGGER}` });
    expect(res.status).toBe(502);
    expectRedacted("platform_message");
  });

  it("/webhook: an update-branch failure's message", async () => {
    const name = `repo-${++counter}`;
    const repository = `${ACCOUNT}/${name}`;
    t.fx.sim.repository(ACCOUNT, name);
    t.fx.sim.git.createBranch(repository, "main");
    t.fx.sim.git.createBranch(repository, "feature");
    t.fx.sim.git.addPullRequest(repository, { base: "main", head: "feature" });
    t.fx.sim.git.push(repository, "main", { files: { "NEWS.md": "x\n" } });
    t.fx.sim.faults.add({ method: "PUT", path: /update-branch$/, respond: { status: 422, body: { message: ECHO } } });
    expect((await sendPush(t.broker.url, HOOK, repository, installationId)).status).toBe(202);
    expect((await pushAudit(t.broker.logs, repository)).failed).toHaveLength(1);
    expectRedacted("platform_message");
  });

  it("/token: the key-set fetch's error text (a jwks_uri from the issuer's discovery document)", async () => {
    const discoveryPath = `${new URL(t.fx.sim.oidc.issuer).pathname.replace(/\/$/, "")}/.well-known/openid-configuration`;
    const jwksUri = `${t.fx.sim.apiBase}/no-such-key-set?access_token=${GHS}&id_token=${JWT}`;
    t.fx.sim.faults.add({ method: "GET", path: discoveryPath, respond: { status: 200, body: { issuer: t.fx.sim.oidc.issuer, jwks_uri: jwksUri } } });
    const oidcToken = await t.fx.sim.oidc.sign({});
    t.secrets.push(oidcToken);
    const res = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app" });
    expect(res.status).toBe(503);
    expectRedacted("err");
  });
});
