// The App key only in a key store (issue 42): the built broker (a child process, as operators run
// it) signs its App JWTs through PKCS#11 in a SoftHSM2 token of the test's own
// (test/support/softhsm.ts), with no PEM in its environment; /token, /sign, /releases and a
// webhook job work end to end against the simulator, which checks each JWT with the App's
// public key. Faults: a wrong PIN, a missing object, the token removed and re-created while the
// broker runs (it recovers without a restart), concurrent requests on a cold cache, a rotation's
// second key (the refused request itself sent again with it). Nothing secret (the PIN, the URI's
// query) reaches a log line or an answer.
import { createPublicKey, randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { signatureFor } from "../server/webhook/verify-signature.js";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { freePort } from "./support/redis-server.js";
import { buildSlowModule, createSoftHsmToken, type SoftHsmToken } from "./support/softhsm.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const TRIGGER = "pkcs11-trigger-secret-0123456789-0123";
const HOOK_SECRET = "pkcs11-webhook-secret-0123456789-012";
const HOOKS = "hsm-hooks";

let fx: TokenFixture;
let hsm: SoftHsmToken;
let secretsDir: string;
let hooksInstallation: number;
const brokers: BrokerProcess[] = [];
const allLines: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
  hooksInstallation = fx.sim.addInstallation({ appId: fx.app.id, account: HOOKS, permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
  hsm = createSoftHsmToken({ pin: "hsm-pin-7311" });
  hsm.importKey(fx.app.privateKeyPem, "app-key", "a1");
  secretsDir = mkdtempSync(join(tmpdir(), "tokensmith-pin-"));
});
afterEach(async () => {
  for (const broker of brokers.splice(0)) {
    await broker.stop();
    allLines.push(...broker.lines);
  }
});
afterAll(async () => {
  await fx.sim.close();
  hsm.dispose();
  rmSync(secretsDir, { recursive: true, force: true });
  // The PIN, the SO PIN, the key and the query part of the URI never reach a log line.
  expectNoSecrets(allLines, [fx.app.privateKeyPem, TRIGGER, HOOK_SECRET]);
  for (const line of allLines) {
    expect(line).not.toContain(`pin-value`);
    expect(line).not.toContain(`module-path=`);
    expect(line).not.toMatch(/hsm-pin-7311|so-pin-5522|wrong-pin-0000/);
  }
});

/** The main platform's settings with the App key only in the token: no HOST_APP_PRIVATE_KEY. */
function keyStoreEnv(overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const { HOST_APP_PRIVATE_KEY: _pem, ...rest } = fx.env;
  const pinFile = join(secretsDir, `pin-${randomUUID()}`);
  writeFileSync(pinFile, `${hsm.pin}\n`, { mode: 0o600 });
  return { ...rest, ...hsm.env, HOST_APP_KEY_URI: hsm.uri({ object: "app-key", id: "a1" }), HOST_APP_KEY_PIN_FILE: pinFile, ...overrides };
}

/** A broker with its admin listener, stopped after the test (or, in `into`, when its owner says). */
async function start(env: Record<string, string | undefined>, into: BrokerProcess[] = brokers): Promise<{ broker: BrokerProcess; admin: string }> {
  const port = await freePort();
  const broker = await spawnBroker({ ...env, ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1" }, 20_000);
  into.push(broker);
  return { broker, admin: `http://127.0.0.1:${port}` };
}

let slow: ReturnType<typeof buildSlowModule> | undefined;
/** The slow key store (test/support/slow-pkcs11.c), compiled once for the file, its C_Sign made to wait `delayMs`. */
function slowModule(delayMs: number): ReturnType<typeof buildSlowModule> {
  slow ??= buildSlowModule(hsm.dir);
  writeFileSync(slow.delayFile, `${delayMs}\n`);
  return slow;
}

const notHeld: string[] = [];
/** RSA keys (PEM) the App does not hold, `n` = 0 or 1: each made once (about 0.2 s of CPU a key). */
const keyNotHeld = (n: 0 | 1): string => (notHeld[n] ??= fx.sim.createApp({ keyFormat: "pkcs8" }).privateKeyPem);

async function readyz(admin: string): Promise<{ status: number; body: { status: string; reasons?: Array<Record<string, unknown>> } }> {
  const response = await fetch(`${admin}/readyz`);
  return { status: response.status, body: (await response.json()) as { status: string; reasons?: Array<Record<string, unknown>> } };
}

/** Polls /readyz until `want` holds (each probe is an event; no fixed sleep decides). */
async function readyzUntil(admin: string, want: (answer: Awaited<ReturnType<typeof readyz>>) => boolean, withinMs = 15_000) {
  const until = Date.now() + withinMs;
  for (;;) {
    const answer = await readyz(admin);
    if (want(answer) || Date.now() > until) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const token = async (url: string) => postJson(`${url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });
const mints = () => fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens"));
/** The calls made with an App JWT (or what was sent as one): the installation lookups and the mints. */
const appCalls = () => fx.sim.requests.filter((r) => r.path.endsWith("/installation") || r.path.endsWith("/access_tokens"));

describe("the App key in a SoftHSM2 token, through PKCS#11", () => {
  describe("one broker (the key in the token, /sign and /releases on, webhooks on): cold at its first test", () => {
    // Started once for these three tests: its settings serve each (the cold one runs first).
    const shared: BrokerProcess[] = [];
    let one: { broker: BrokerProcess; admin: string };
    beforeAll(async () => {
      one = await start(keyStoreEnv({ PROCESS_TRIGGER_SECRET: TRIGGER, HOST_WEBHOOK_SECRET: HOOK_SECRET, AUTO_UPDATE_BRANCHES: "true" }), shared);
    });
    afterAll(async () => {
      for (const broker of shared) {
        await broker.stop();
        allLines.push(...broker.lines);
      }
    });

    it("24 concurrent requests on a cold broker share one signature: all mint", async () => {
      const { broker } = one;
      const answers = await Promise.all(Array.from({ length: 24 }, () => token(broker.url)));
      expect(answers.map((a) => a.status)).toEqual(Array(24).fill(200));
    });

    it("/token, /sign and /releases work with no PEM set; /readyz is ready; the log shows the URI without its query", async () => {
      const { broker, admin } = one;
      expect(await readyzUntil(admin, (a) => a.status === 200)).toEqual({ status: 200, body: { status: "ready" } });

      fx.sim.clearRequests();
      const minted = await token(broker.url);
      expect(minted.status).toBe(200);
      expect(fx.sim.tokens.get(minted.body.token as string)?.installationId).toBeDefined();
      expect(mints()[0]!.auth).toEqual({ kind: "app", appId: String(fx.app.id) });

      const branch = `hsm-${randomUUID().slice(0, 8)}`;
      const head = fx.sim.git.createBranch("octo-org/app", branch, { files: { "README.md": "# app\n" } });
      const signed = await postJson(`${broker.url}/sign`, {
        repo: "octo-org/app", branch, expected_head_oid: head, message: { headline: "chore: signed through the key store" },
        additions: [{ path: "VERSION", contents: Buffer.from("4.2.0\n").toString("base64") }],
      }, { authorization: `Bearer ${TRIGGER}` });
      expect(signed.status).toBe(200);
      expect(signed.body).toMatchObject({ ok: true });

      const releases = await fetch(`${broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER}` } });
      expect(releases.status).toBe(200);
      // The crawl lists the App's installations and mints per installation: every call with a JWT from the token.
      const body = (await releases.json()) as { repos: Array<{ repo: string }>; truncated: boolean };
      expect(body.truncated).toBe(false);
      expect(body.repos.map((r) => r.repo)).toContain("octo-org/app");
    });

    it("a webhook push job updates the open pull request with a token minted through the key store", async () => {
      const { broker } = one;
      const name = `repo-${randomUUID().slice(0, 8)}`;
      const repository = `${HOOKS}/${name}`;
      fx.sim.repository(HOOKS, name);
      fx.sim.git.createBranch(repository, "main");
      const pull = fx.sim.git.addPullRequest(repository, { base: "main" });
      fx.sim.git.push(repository, "main");
      const payload = JSON.stringify({
        ref: "refs/heads/main", before: "0".repeat(40), after: randomBytes(20).toString("hex"), created: false, deleted: false, forced: false,
        repository: { id: 1, name, full_name: repository, owner: { login: HOOKS, name: HOOKS } },
        installation: { id: hooksInstallation }, sender: { login: "mona" },
      });
      const delivered = await fetch(`${broker.url}/webhook`, {
        method: "POST", body: payload,
        headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(HOOK_SECRET, payload) },
      });
      expect(delivered.status).toBe(202);
      const until = Date.now() + 15_000;
      while (!fx.sim.git.updateBranchCalls.some((c) => c.repository === repository && c.number === pull) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      expect(fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository).map((c) => c.number)).toEqual([pull]);
    });
  });

  it("a wrong PIN: 503 app_key_unavailable with Retry-After, /readyz names the login step; the PIN is never shown", async () => {
    const { broker, admin } = await start(keyStoreEnv({ HOST_APP_KEY_PIN_FILE: undefined, HOST_APP_KEY_PIN: "wrong-pin-0000", PROCESS_TRIGGER_SECRET: TRIGGER }));
    const answer = await token(broker.url);
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({ error: "app_key_unavailable" });
    expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
    // /sign and /releases need an App JWT too: the same answer.
    const signed = await postJson(`${broker.url}/sign`, {
      repo: "octo-org/app", branch: "main", expected_head_oid: "a".repeat(40), message: { headline: "x" },
      additions: [{ path: "VERSION", contents: Buffer.from("1\n").toString("base64") }],
    }, { authorization: `Bearer ${TRIGGER}` });
    expect([signed.status, signed.body]).toEqual([503, { error: "app_key_unavailable" }]);
    const releases = await fetch(`${broker.url}/releases`, { headers: { authorization: `Bearer ${TRIGGER}` } });
    expect([releases.status, await releases.json()]).toEqual([503, { error: "app_key_unavailable" }]);
    expect(Number(releases.headers.get("retry-after"))).toBeGreaterThan(0);
    const ready = await readyzUntil(admin, (a) => a.status === 503);
    expect(ready.status).toBe(503);
    expect(ready.body.reasons).toEqual([{
      reason: "app_key_unavailable", platform: "main", setting: "HOST_APP_KEY_URI",
      key: `HOST_APP_KEY_URI pkcs11:token=${hsm.label};object=app-key;id=%a1;type=private?…`, step: "login", problem: "C_Login failed (CKR_PIN_INCORRECT)",
    }]);
    expect(JSON.stringify(ready.body)).not.toContain("wrong-pin-0000");
  });

  it("a missing object: the object step is named; the PIN given in the URI itself never shows", async () => {
    const { broker, admin } = await start(keyStoreEnv({ HOST_APP_KEY_PIN_FILE: undefined, HOST_APP_KEY_URI: hsm.uri({ object: "no-such-key", pin: hsm.pin }) }));
    expect((await token(broker.url)).body).toEqual({ error: "app_key_unavailable" });
    const ready = await readyzUntil(admin, (a) => a.status === 503);
    expect(ready.body.reasons).toEqual([expect.objectContaining({ reason: "app_key_unavailable", step: "object", problem: "no private key matches the URI's object/id" })]);
    const logged = () => broker.lines.some((line) => line.includes("object: no private key matches"));
    for (let i = 0; i < 50 && !logged(); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(logged()).toBe(true);
  });

  it("the token removed while the broker runs: 503 and /readyz says so; the token back (re-created, key imported): minting again without a restart", async () => {
    const own = createSoftHsmToken({ label: "removable" });
    try {
      own.importKey(fx.app.privateKeyPem, "app-key", "01");
      const { broker, admin } = await start(keyStoreEnv({ ...own.env, HOST_APP_KEY_URI: own.uri({ object: "app-key" }), HOST_APP_KEY_PIN_FILE: undefined, HOST_APP_KEY_PIN: own.pin }));
      expect((await readyzUntil(admin, (a) => a.status === 200)).status).toBe(200);
      own.remove();
      const gone = await readyzUntil(admin, (a) => a.status === 503);
      expect(gone.body.reasons).toEqual([expect.objectContaining({ reason: "app_key_unavailable", setting: "HOST_APP_KEY_URI" })]);
      expect((await token(broker.url)).body).toEqual({ error: "app_key_unavailable" });

      own.reinit();
      own.importKey(fx.app.privateKeyPem, "app-key", "01");
      expect((await readyzUntil(admin, (a) => a.status === 200)).status).toBe(200);
      expect((await token(broker.url)).status).toBe(200);
    } finally {
      own.dispose();
    }
  });

  it("a slow key store (C_Sign waits 2 s): 16 concurrent requests share the one signature and all mint; the broker answers others meanwhile", async () => {
    const slow = slowModule(2000);
    const { broker, admin } = await start(keyStoreEnv({ ...slow.env, HOST_APP_KEY_URI: hsm.uri({ object: "app-key", modulePath: slow.modulePath }) }));
    const order: string[] = [];
    const tokens = Promise.all(Array.from({ length: 16 }, () => token(broker.url))).then((answers) => {
      order.push("tokens");
      return answers;
    });
    // C_Sign runs off the event loop: /healthz is answered while the signature is being made.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    order.push("healthz");
    const answers = await tokens;
    expect(answers.map((a) => a.status)).toEqual(Array(16).fill(200));
    expect(order).toEqual(["healthz", "tokens"]);
  });

  it("a key store that does not answer within 10 s: 503 app_key_unavailable naming the sign step; answering again: minting without a restart", async () => {
    const slow = slowModule(12_000);
    const { broker } = await start(keyStoreEnv({ ...slow.env, HOST_APP_KEY_URI: hsm.uri({ object: "app-key", modulePath: slow.modulePath }) }));
    const hung = await token(broker.url);
    expect(hung.status).toBe(503);
    expect(hung.body).toEqual({ error: "app_key_unavailable" });
    // The log line is written beside the answer: wait for it to arrive through the pipe.
    const logged = () => broker.lines.some((line) => line.includes("sign: no signature within 10000 ms"));
    for (let i = 0; i < 50 && !logged(); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(logged()).toBe(true);
    writeFileSync(slow.delayFile, "0\n");
    const until = Date.now() + 15_000;
    let again = await token(broker.url);
    while (again.status !== 200 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      again = await token(broker.url);
    }
    expect(again.status).toBe(200);
  }, 60_000);

  it("a key store that signs only raw PKCS#1 (CKM_RSA_PKCS, as Cloud KMS's kmsp11): the broker gives it the DigestInfo; /token mints", async () => {
    const slow = slowModule(0);
    const { broker, admin } = await start(keyStoreEnv({ ...slow.env, SLOW_PKCS11_RAW_ONLY: "1", HOST_APP_KEY_URI: hsm.uri({ object: "app-key", modulePath: slow.modulePath }) }));
    expect((await readyzUntil(admin, (a) => a.status === 200)).status).toBe(200);
    expect((await token(broker.url)).status).toBe(200);
  });

  it("rotation: a revoked first key (PEM) is refused with 401; that same request is sent again signed with HOST_APP_KEY_URI_NEXT in the token: the first /token answers 200", async () => {
    const revoked = keyNotHeld(0); // a key this App does not hold
    const { HOST_APP_PRIVATE_KEY: _pem, ...rest } = fx.env;
    const { broker } = await start({ ...rest, ...hsm.env, HOST_APP_PRIVATE_KEY: revoked, HOST_APP_KEY_URI_NEXT: hsm.uri({ object: "app-key" }), HOST_APP_KEY_PIN: hsm.pin });
    fx.sim.clearRequests();
    const first = await token(broker.url);
    expect(first.status).toBe(200);
    // The lookup was refused once (the first key's JWT) and sent once more (the token's); the mint went with the token's JWT.
    expect(appCalls().map((r) => `${r.method} ${r.auth.kind}`)).toEqual(["GET invalid", "GET app", "POST app"]);
    // From then on the token's key signs: nothing more is refused.
    fx.sim.clearRequests();
    expect((await token(broker.url)).status).toBe(200);
    expect(appCalls().map((r) => r.auth.kind)).not.toContain("invalid");
    expectNoSecrets(broker.lines, [revoked]);
  });

  it("rotation while the broker runs: the first key deleted on the platform, the request whose cached JWT it refuses mints with …_NEXT; neither key accepted: 502 installation_token_failed after one try with each", async () => {
    const app = fx.sim.apps.get(fx.app.id)!;
    const tokenKey = app.publicKey; // the key imported into the token (HOST_APP_KEY_URI_NEXT)
    const old = keyNotHeld(1);
    const { HOST_APP_PRIVATE_KEY: _pem, ...rest } = fx.env;
    try {
      // The platform holds only the old key: the broker signs with it, caches the JWT and the installation.
      app.publicKey = createPublicKey(old);
      const { broker } = await start({ ...rest, ...hsm.env, HOST_APP_PRIVATE_KEY: old, HOST_APP_KEY_URI_NEXT: hsm.uri({ object: "app-key" }), HOST_APP_KEY_PIN: hsm.pin });
      expect((await token(broker.url)).status).toBe(200);

      // The old key deleted in the App's settings, the token's key added: the cached JWT is refused at the mint, and the mint sent again.
      app.publicKey = tokenKey;
      fx.sim.clearRequests();
      const rotated = await token(broker.url);
      expect(rotated.status).toBe(200);
      expect(fx.sim.tokens.get(rotated.body.token as string)?.installationId).toBe(fx.installationId);
      expect(mints().map((r) => r.auth.kind)).toEqual(["invalid", "app"]);

      // Neither key held by the App: one try with each, then the mint's own failure, cleanly.
      app.publicKey = createPublicKey(keyNotHeld(0)); // neither the old key nor the token's
      fx.sim.clearRequests();
      const refused = await token(broker.url);
      expect([refused.status, refused.body]).toEqual([502, { error: "installation_token_failed" }]);
      expect(refused.headers.get("retry-after")).toBeNull();
      expect(mints().map((r) => r.auth.kind)).toEqual(["invalid", "invalid"]);

      // The platform takes the token's key again: minting resumes without a restart.
      app.publicKey = tokenKey;
      fx.sim.clearRequests();
      expect((await token(broker.url)).status).toBe(200);
      // After the two refusals the token's key signs first again: nothing is refused.
      expect(appCalls().map((r) => r.auth.kind)).not.toContain("invalid");
      expectNoSecrets(broker.lines, [old]);
    } finally {
      app.publicKey = tokenKey;
    }
  });
});

describe("doctor with the key in the token", () => {
  it("names each step and says which key GET /app accepts", async () => {
    const { execFile } = await import("node:child_process");
    const { fileURLToPath } = await import("node:url");
    const cli = fileURLToPath(new URL("../bin/tokensmith.js", import.meta.url));
    // Asynchronously: the simulator answering doctor runs in this process.
    const spawnDoctor = (env: Record<string, string | undefined>) => new Promise<{ stdout: string; stderr: string; status: number | null }>((resolve) => {
      execFile(process.execPath, [cli, "doctor"], { env: { PATH: process.env.PATH, ...env } as NodeJS.ProcessEnv, encoding: "utf8", timeout: 30_000 }, (error, stdout, stderr) => {
        resolve({ stdout, stderr, status: error ? (typeof error.code === "number" ? error.code : 1) : 0 });
      });
    });
    const revoked = keyNotHeld(0);
    const { HOST_APP_PRIVATE_KEY: _pem, ...rest } = fx.env;
    const run = spawnDoctor;
    const good = await run(keyStoreEnv());
    const shown = `HOST_APP_KEY_URI pkcs11:token=${hsm.label};object=app-key;id=%a1;type=private?…`;
    expect(good.stdout).toContain(`ok   App ${fx.app.id}: key store ${shown}: module loaded, token found, logged in, private key found`);
    expect(good.stdout).toContain(`ok   App ${fx.app.id} on ${fx.sim.apiBase}: GET /app accepts the JWT signed with ${shown}`);

    const wrongPin = await run(keyStoreEnv({ HOST_APP_KEY_PIN_FILE: undefined, HOST_APP_KEY_PIN: "wrong-pin-0000" }));
    expect(wrongPin.stdout).toContain(`FAIL App ${fx.app.id}: key store ${shown}: the login step failed (C_Login failed (CKR_PIN_INCORRECT))`);
    expect(wrongPin.status).toBe(1);

    const badModule = await run(keyStoreEnv({ HOST_APP_KEY_URI: `pkcs11:token=${hsm.label};object=app-key?module-path=/nonexistent/libpkcs11.so` }));
    expect(badModule.stdout).toMatch(/FAIL App \d+: key store HOST_APP_KEY_URI pkcs11:token=[^ ]+;object=app-key\?…: the module step failed \(cannot load the library at module-path/);
    expect(badModule.stdout).not.toContain("/nonexistent/");

    const rotating = await run({ ...rest, ...hsm.env, HOST_APP_PRIVATE_KEY: revoked, HOST_APP_KEY_URI_NEXT: hsm.uri({ object: "app-key" }), HOST_APP_KEY_PIN: hsm.pin });
    expect(rotating.stdout).toContain(`FAIL App ${fx.app.id} on ${fx.sim.apiBase}: GET /app refused the App JWT signed with HOST_APP_PRIVATE_KEY (HTTP 401`);
    expect(rotating.stdout).toContain(`warn App ${fx.app.id}: the platform refuses HOST_APP_PRIVATE_KEY but accepts HOST_APP_KEY_URI_NEXT`);
    for (const out of [good, wrongPin, badModule, rotating]) {
      allLines.push(...out.stdout.split("\n"), ...out.stderr.split("\n"));
      expectNoSecrets([out.stdout, out.stderr], [fx.app.privateKeyPem, revoked]);
    }
  });
});
