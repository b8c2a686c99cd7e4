// The store seal of a key-store key (docs/security.md#the-app-key-never-leaves-its-key-store): the
// key's RSASSA-PKCS1-v1_5 signature of SEAL_SIGNATURE_LABEL, made in a real SoftHSM2 token
// (test/support/softhsm.ts). Two processes holding the same key derive the same seal, and one
// holding another key another seal; through a shared Redis (SERVICE_JWKS_CACHE), a key-set
// snapshot or a policy entry sealed by one built broker is trusted by a second on the same key and
// is a miss for a broker on another key, which reads for itself.
import { execFile } from "node:child_process";
import { createHash, sign } from "node:crypto";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { openKeyValueStore, type KeyValueStore } from "../server/kv/key-value-store.js";
import { createLogger } from "../server/log.js";
import { SEAL_SIGNATURE_LABEL } from "../server/signing/app-key.js";
import { postJson } from "./support/post-json.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { freePort } from "./support/redis-server.js";
import { REDIS_URL } from "./support/redis-url.js";
import type { SealDriverResult } from "./support/seal-driver.js";
import { createSoftHsmToken, type SoftHsmToken } from "./support/softhsm.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const DRIVER = fileURLToPath(new URL("../build/test/support/seal-driver.js", import.meta.url));
const POLICY = "rules:\n  - name: pushes\n    if: {event: push}\n    permissions: {contents: write}\n";

let fx: TokenFixture;
/** A second App on the same owner, whose key is the token's other key: a broker of its own works, on another seal. */
let other: { id: number; privateKeyPem: string };
let hsm: SoftHsmToken;
let redis: KeyValueStore;
const brokers: BrokerProcess[] = [];
const allLines: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
  fx.sim.git.createBranch("octo-org/app", "main", { files: { ".github/tokensmith.yml": POLICY } });
  other = fx.sim.createApp();
  fx.sim.addInstallation({ appId: other.id, account: "octo-org", permissions: { ...INSTALLED_PERMISSIONS }, repositories: ["app"] });
  hsm = createSoftHsmToken({ pin: "seal-pin-6620" });
  hsm.importKey(fx.app.privateKeyPem, "app-key", "a1");
  hsm.importKey(other.privateKeyPem, "other-key", "b2");
  const quiet = createLogger({ destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
  // The test's own view of the brokers' key-set namespace.
  redis = openKeyValueStore(REDIS_URL, "tokensmith-jwks", { log: quiet, timeoutMs: 2000 });
});
afterEach(async () => {
  for (const broker of brokers.splice(0)) {
    await broker.stop();
    allLines.push(...broker.lines);
  }
});
afterAll(async () => {
  await redis.close();
  await fx.sim.close();
  hsm.dispose();
  expectNoSecrets(allLines, [fx.app.privateKeyPem, other.privateKeyPem]);
  for (const line of allLines) expect(line).not.toMatch(/seal-pin-6620|module-path=/);
});

/** The seal as a second process derives it (test/support/seal-driver.ts). */
function derive(object: string): Promise<SealDriverResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [DRIVER], { timeout: 30_000, env: { PATH: process.env.PATH, ...hsm.env } }, (error, stdout, stderr) => {
      if (error) reject(new Error(`seal driver failed: ${stderr}`));
      else resolve(JSON.parse(stdout) as SealDriverResult);
    });
    child.stdin!.end(JSON.stringify({ uri: hsm.uri({ object }), pin: hsm.pin }));
  });
}

/** A built broker whose main App key is `object` in the token (the first App's or the other's), sharing the suite's Redis. */
async function start(object: "app-key" | "other-key"): Promise<{ broker: BrokerProcess; admin: string }> {
  const { HOST_APP_PRIVATE_KEY: _pem, ...rest } = fx.env;
  const port = await freePort();
  const broker = await spawnBroker({
    ...rest, ...hsm.env, ...(object === "other-key" ? { HOST_APP_ID: String(other.id) } : {}),
    HOST_APP_KEY_URI: hsm.uri({ object }), HOST_APP_KEY_PIN: hsm.pin, SERVICE_JWKS_CACHE: REDIS_URL,
    TOKEN_POLICY: "optional", ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1",
  });
  brokers.push(broker);
  return { broker, admin: `http://127.0.0.1:${port}` };
}

type Readyz = { status: number; reasons: Array<{ reason: string }> };
/** Polls /readyz until `want` holds; each probe also makes the seal once the key store answers (readiness-checks.ts). */
async function readyzUntil(admin: string, want: (answer: Readyz) => boolean, withinMs = 15_000): Promise<Readyz> {
  const until = Date.now() + withinMs;
  for (;;) {
    const response = await fetch(`${admin}/readyz`);
    const answer = { status: response.status, reasons: ((await response.json()) as { reasons?: Readyz["reasons"] }).reasons ?? [] };
    if (want(answer) || Date.now() > until) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Waits for a log line that includes `text` (stdout trails the answers). */
async function logged(broker: BrokerProcess, text: string): Promise<boolean> {
  for (let i = 0; i < 100; i += 1) {
    if (broker.lines.some((line) => line.includes(text))) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

const token = async (url: string) => postJson(`${url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });

describe("the seal of a key-store key", () => {
  it("two processes on the same key derive the same seal (the key's PKCS#1 v1.5 signature of the label); another key another; none before the first signature", async () => {
    const [one, two, otherKey] = await Promise.all([derive("app-key"), derive("app-key"), derive("other-key")]);
    expect(one).toEqual(two);
    const expected = createHash("sha256").update(sign("sha256", Buffer.from(SEAL_SIGNATURE_LABEL), fx.app.privateKeyPem)).digest("hex");
    expect(one.secret).toBe(expected);
    expect(otherKey.secret).toBe(createHash("sha256").update(sign("sha256", Buffer.from(SEAL_SIGNATURE_LABEL), other.privateKeyPem)).digest("hex"));
    expect(otherKey.secret).not.toBe(one.secret);
    expect(otherKey.snapshotKey).not.toBe(one.snapshotKey);
    expect(otherKey.policyKey).not.toBe(one.policyKey);
    // The two purposes' keys differ from each other too.
    expect(one.snapshotKey).not.toBe(one.policyKey);
    expect([one.beforeSignature, two.beforeSignature, otherKey.beforeSignature]).toEqual([null, null, null]);
  });

  it("a key-set snapshot and a policy entry sealed by one broker are trusted by a second on the same key; a broker on another key ignores both and reads for itself", async () => {
    const reads = () => fx.sim.requests.filter((r) => r.path === "/repos/octo-org/app/contents/.github/tokensmith.yml").length;
    const permissionsOf = (answer: { body: Record<string, unknown> }) => fx.sim.tokens.get(answer.body.token as string)?.permissions;
    fx.sim.oidc.keyEndpoint = "ok";
    fx.sim.clearRequests();
    try {
      // The writer verifies a job's token (its key set sealed into the store) and reads the policy (sealed too).
      const writer = await start("app-key");
      expect((await readyzUntil(writer.admin, (a) => a.status === 200)).status).toBe(200);
      const first = await token(writer.broker.url);
      expect([first.status, permissionsOf(first)]).toEqual([200, { contents: "write" }]);
      expect(reads()).toBe(1);
      // The snapshot is written once the seal is made, after the token is verified and before the
      // policy is read: once it is in the store, so is the sealed policy entry.
      let stored: { tag?: unknown } | undefined;
      for (let i = 0; i < 100 && !stored?.tag; i += 1) {
        stored = await redis.get<{ tag?: unknown }>(`jwks:${fx.sim.oidc.issuer}`);
        if (!stored?.tag) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(stored).toMatchObject({ tag: expect.any(String) });

      // The issuer down. A broker with an admin port fetches the key set at start (its first
      // readiness check), so the two readers start only now.
      fx.sim.oidc.keyEndpoint = "fail";
      const same = await start("app-key");
      const otherKey = await start("other-key");
      // Same key: ready only through the snapshot, which opens once its own seal is made.
      expect((await readyzUntil(same.admin, (a) => a.status === 200)).status).toBe(200);
      expect(await logged(same.broker, "using last-known-good key set snapshot")).toBe(true);
      const served = await token(same.broker.url);
      expect([served.status, permissionsOf(served)]).toEqual([200, { contents: "write" }]);
      expect(fx.sim.tokens.get(served.body.token as string)?.installationId).toBe(fx.installationId);
      expect(reads()).toBe(1); // the writer's policy entry, trusted

      // Another key: its key store answers (no app_key_unavailable), but the snapshot does not open.
      const refused = await readyzUntil(otherKey.admin, () => otherKey.broker.lines.some((line) => line.includes("key set snapshot failed its integrity check; ignored")));
      expect(refused).toEqual({ status: 503, reasons: [expect.objectContaining({ reason: "key_set_not_fetched" })] });
      expect(await token(otherKey.broker.url)).toMatchObject({ status: 503, body: { error: "oidc_key_fetch_failed", reason: "jwks_unavailable" } });
      expect(otherKey.broker.lines.some((line) => line.includes("using last-known-good key set snapshot"))).toBe(false);

      // The issuer back: the broker on the other key verifies, finds the policy entry does not
      // open under its seal (a miss), reads the file itself and mints as its own App.
      fx.sim.oidc.keyEndpoint = "ok";
      expect((await readyzUntil(otherKey.admin, (a) => a.status === 200)).status).toBe(200);
      const own = await token(otherKey.broker.url);
      expect([own.status, permissionsOf(own)]).toEqual([200, { contents: "write" }]);
      expect(fx.sim.installation(fx.sim.tokens.get(own.body.token as string)!.installationId).appId).toBe(other.id);
      expect(reads()).toBe(2);
    } finally {
      fx.sim.oidc.keyEndpoint = "ok";
    }
  });
});
