// Two broker instances sharing the policy cache through Redis (SERVICE_JWKS_CACHE): one read of a
// policy serves both, and a push delivered to one drops the cached read for both. Also: an
// installation without `contents` cannot have policies read (optional → the default token,
// required → denied), over HTTP.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { openKeyValueStore } from "../server/kv/key-value-store.js";
import { createLogger } from "../server/log.js";
import { policyFileKey } from "../server/policy/policy-files.js";
import { postJson, startBroker, type TestBroker } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { REDIS_URL } from "./support/redis-url.js";
import { signatureFor } from "../server/webhook/verify-signature.js";

const SECRET = "policy-shared-secret-0123456789abcde";
let fx: TokenFixture;
const brokers: TestBroker[] = [];
const POLICY = "rules:\n  - name: pushes\n    if: {event: push}\n    permissions: {contents: write}\n";

beforeAll(async () => {
  fx = await tokenFixture();
  fx.sim.git.createBranch("octo-org/app", "main", { files: { ".github/tokensmith.yml": POLICY } });
});
afterAll(async () => {
  for (const broker of brokers) await broker.close();
  await fx.sim.close();
  expectNoSecrets(brokers.flatMap((b) => b.logs), [fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
});

async function broker(env: Record<string, string> = {}) {
  const started = await startBroker({ ...fx.env, TOKEN_POLICY: "optional", HOST_WEBHOOK_SECRET: SECRET, ...env });
  brokers.push(started);
  return started;
}
async function mint(at: TestBroker, repo = "app") {
  const answer = await postJson(`${at.url}/token`, { oidcToken: await fx.sim.oidc.sign({ repository: `octo-org/${repo}` }), owner: "octo-org", repo });
  return { ...answer, permissions: fx.sim.tokens.get(String(answer.body.token))?.permissions };
}
const reads = () => fx.sim.requests.filter((r) => r.path === "/repos/octo-org/app/contents/.github/tokensmith.yml").length;

describe("shared policy cache (Redis)", () => {
  it("one read serves both instances; a push delivered to one drops it for both", async () => {
    const shared = { SERVICE_JWKS_CACHE: REDIS_URL };
    const a = await broker(shared);
    const b = await broker(shared);
    fx.sim.clearRequests();
    expect((await mint(a)).permissions).toEqual({ contents: "write" });
    expect((await mint(b)).permissions).toEqual({ contents: "write" });
    expect(reads()).toBe(1);

    fx.sim.git.setFile("octo-org/app", ".github/tokensmith.yml", "rules:\n  - name: pushes\n    if: {event: push}\n    permissions: {contents: read}\n");
    const repo = fx.sim.repository("octo-org", "app");
    const raw = JSON.stringify({
      ref: "refs/heads/main", deleted: false,
      repository: { id: repo.id, name: "app", full_name: "octo-org/app", default_branch: "main", owner: { login: "octo-org", id: repo.ownerId } },
      commits: [{ added: [], modified: [".github/tokensmith.yml"], removed: [] }],
      installation: { id: fx.installationId },
    });
    const delivered = await fetch(`${a.url}/webhook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(SECRET, raw) },
      body: raw,
    });
    expect(delivered.status).toBe(200);
    expect((await mint(b)).permissions).toEqual({ contents: "read" });
    expect((await mint(a)).permissions).toEqual({ contents: "read" });
    expect(reads()).toBe(2);
  });
});

describe("a policy entry someone rewrote in the shared store", () => {
  it("an unsealed, tampered or moved entry is a miss: the file is read again and the token stays restricted", async () => {
    const READ_ONLY = "rules:\n  - name: read-only\n    if: {event: push}\n    permissions: {contents: read}\n";
    fx.sim.git.createBranch("octo-org/other", "main", { files: { ".github/tokensmith.yml": READ_ONLY } });
    const a = await broker({ SERVICE_JWKS_CACHE: REDIS_URL });
    // What anyone with write access to Redis sees of the brokers' policy namespace.
    const quiet = createLogger({ destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
    const redis = openKeyValueStore(REDIS_URL, "tokensmith-policy", { log: quiet, timeoutMs: 2000 });
    try {
      const otherKey = policyFileKey(fx.sim.apiBase, { repositoryId: fx.sim.repository("octo-org", "other").id });
      const appKey = policyFileKey(fx.sim.apiBase, { repositoryId: fx.sim.repository("octo-org", "app").id });
      const otherReads = () => fx.sim.requests.filter((r) => r.path === "/repos/octo-org/other/contents/.github/tokensmith.yml").length;
      fx.sim.clearRequests();
      expect((await mint(a, "other")).permissions).toEqual({ contents: "read" });
      expect((await mint(a, "app")).permissions).toEqual({ contents: expect.any(String) });
      const sealed = await redis.get<{ v: number; data: string; tag: string }>(otherKey);
      expect(sealed).toMatchObject({ v: 1, tag: expect.any(String) });
      expect(JSON.parse(sealed!.data)).toMatchObject({ text: READ_ONLY });
      expect((await mint(a, "other")).permissions).toEqual({ contents: "read" });
      expect(otherReads()).toBe(1); // the sealed entry is used as it is

      const planted: Array<[string, unknown]> = [
        ["the old, unsealed shape", { at: Date.now(), absent: true }],
        ["the sealed shape, data changed", { ...sealed!, data: JSON.stringify({ at: Date.now(), absent: true }) }],
        ["another repository's sealed entry", await redis.get(appKey)],
      ];
      for (const [what, value] of planted) {
        await redis.set(otherKey, value, 60_000);
        const before = otherReads();
        const answer = await mint(a, "other");
        expect({ what, permissions: answer.permissions }).toEqual({ what, permissions: { contents: "read" } });
        expect({ what, reads: otherReads() - before }).toEqual({ what, reads: 1 });
      }
    } finally {
      await redis.close();
    }
  });
});

describe("an installation without contents permission", () => {
  it("optional: the default token, no policy read; required: policy_denied", async () => {
    const app = fx.sim.createApp();
    const installationId = fx.sim.addInstallation({ appId: app.id, account: "octo-org", permissions: { issues: "write", metadata: "read" }, repositories: ["app"] });
    const env = { HOST_APP_ID: String(app.id), HOST_APP_PRIVATE_KEY: app.privateKeyPem, TOKEN_PERMISSIONS: "issues=write" };
    const optional = await broker(env);
    fx.sim.clearRequests();
    const answer = await mint(optional);
    expect(answer.status).toBe(200);
    expect(answer.permissions).toEqual({ issues: "write" });
    expect(fx.sim.requests.filter((r) => r.path.includes("/contents/") || JSON.stringify(r.body ?? "").includes('"contents"'))).toEqual([]);
    expect(fx.sim.tokens.get(String(answer.body.token))?.installationId).toBe(installationId);
    const required = await broker({ ...env, TOKEN_POLICY: "required" });
    expect((await mint(required)).body).toEqual({ error: "policy_denied", detail: "the App's installation has no contents permission, so no policy can be read, and the broker requires one (TOKEN_POLICY=required)" });
  });
});
