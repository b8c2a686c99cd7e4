// Secrets as files (server/secret-files.ts): every secret setting NAME may be given as NAME_FILE;
// the value is the file's content without one trailing newline, a changed file is read again,
// NAME wins over NAME_FILE (a warning), an unreadable file is a problem naming the setting and the
// error code only. Then over HTTP: a built broker with its App key, its PROCESS_TRIGGER_SECRET and
// its three store URLs (each with its Redis password) as files, and one with a wrong password.
import { mkdtempSync, rmSync, writeFileSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { resolveSecretFiles, secretFileProblems, SECRET_SETTING_NAMES } from "../server/secret-files.js";
import { parseSettings } from "../server/settings.js";
import { settingsProblems } from "../server/settings-problems.js";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { freePort, ownRedis, type OwnRedis } from "./support/redis-server.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const dir = mkdtempSync(join(tmpdir(), "tokensmith-secret-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (content: string) => {
  const path = join(dir, `secret-${++n}`);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
};

describe("NAME_FILE", () => {
  it.each(SECRET_SETTING_NAMES.map((name) => [name]))("%s_FILE gives %s its file's content (one trailing newline dropped)", (name) => {
    const value = `value-of-${name}-0123456789abcdef0123456789`;
    const env = resolveSecretFiles({ [`${name}_FILE`]: file(`${value}\n`) });
    expect(env[name]).toBe(value);
    expect(secretFileProblems({ [`${name}_FILE`]: file(value) })).toEqual([]);
  });

  it("the secrets reach the parsed settings: PROCESS_TRIGGER_SECRET_FILE and HOST_WEBHOOK_SECRET_FILE", () => {
    const trigger = "t".repeat(40);
    const settings = parseSettings(resolveSecretFiles({ PROCESS_TRIGGER_SECRET_FILE: file(`${trigger}\n`), HOST_WEBHOOK_SECRET_FILE: file("w".repeat(40)) }));
    expect(settings.processTriggerSecret).toBe(trigger);
    expect(settings.webhookSecret).toBe("w".repeat(40));
  });

  it("the store URLs reach the parsed settings: SERVICE_JWKS_CACHE_FILE, LEGACY_QUOTA_KV_FILE and WEBHOOK_QUEUE_FILE, passwords and all", () => {
    const url = (db: number) => `redis://:store-password-0123456789@127.0.0.1:6390/${db}`;
    const settings = parseSettings(resolveSecretFiles({
      SERVICE_JWKS_CACHE_FILE: file(`${url(1)}\n`), LEGACY_QUOTA_KV_FILE: file(`${url(2)}\n`), WEBHOOK_QUEUE_FILE: file(`${url(3)}?prefix=files\n`),
    }));
    expect([settings.jwksCacheUrl, settings.releasesKvUrl, settings.webhookQueueUrl]).toEqual([url(1), url(2), `${url(3)}?prefix=files`]);
  });

  it("a changed file is read again (checked at most once a second)", () => {
    const path = file("first-secret\n");
    const t0 = 1_000_000;
    expect(resolveSecretFiles({ HOST_APP_KEY_PIN_FILE: path }, t0).HOST_APP_KEY_PIN).toBe("first-secret");
    writeFileSync(path, "second-secret-longer\n");
    utimesSync(path, new Date(), new Date(Date.now() + 5000));
    expect(resolveSecretFiles({ HOST_APP_KEY_PIN_FILE: path }, t0 + 10).HOST_APP_KEY_PIN).toBe("first-secret");
    expect(resolveSecretFiles({ HOST_APP_KEY_PIN_FILE: path }, t0 + 1500).HOST_APP_KEY_PIN).toBe("second-secret-longer");
  });

  it("NAME wins over NAME_FILE (a warning); an unreadable file leaves NAME unset and is a failing problem", () => {
    const both = { PROCESS_TRIGGER_SECRET: "x".repeat(40), PROCESS_TRIGGER_SECRET_FILE: file("y".repeat(40)) };
    expect(resolveSecretFiles(both).PROCESS_TRIGGER_SECRET).toBe("x".repeat(40));
    expect(secretFileProblems(both)).toEqual([{ setting: "PROCESS_TRIGGER_SECRET_FILE", message: "PROCESS_TRIGGER_SECRET and PROCESS_TRIGGER_SECRET_FILE are both set: PROCESS_TRIGGER_SECRET is used", fails: false }]);
    const missing = { HOST_APP_ID: "1", HOST_APP_PRIVATE_KEY_FILE: join(dir, "absent") };
    expect(resolveSecretFiles(missing).HOST_APP_PRIVATE_KEY).toBeUndefined();
    const problems = settingsProblems(parseSettings(resolveSecretFiles(missing)), missing);
    expect(problems).toContainEqual({ level: "error", fails: true, fields: { setting: "HOST_APP_PRIVATE_KEY_FILE" }, message: "HOST_APP_PRIVATE_KEY_FILE names a file that cannot be read (ENOENT): HOST_APP_PRIVATE_KEY is unset" });
  });
});

describe("a built broker with its secrets as files", () => {
  // One broker takes all five from files: the App key, the /releases secret, and the three store
  // URLs, each with the password of a Redis that requires one. A second broker, with a wrong
  // password in the same files, shows each store unreachable.
  let fx: TokenFixture;
  let redis: OwnRedis;
  const password = "store-files-password-0123456789abcd";
  const secret = "files-trigger-secret-0123456789-0123";
  const started: BrokerProcess[] = [];
  const minted: string[] = [];
  let right: StoreBroker;

  type StoreBroker = { broker: BrokerProcess; readyz: () => Promise<{ status: string }> };
  const start = async (redisSecret: string, env: Record<string, string | undefined>): Promise<StoreBroker> => {
    const url = `redis://:${redisSecret}@127.0.0.1:${redis.port}`;
    const port = await freePort();
    const broker = await spawnBroker({
      ...env, ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1",
      SERVICE_JWKS_CACHE_FILE: file(`${url}/0\n`), LEGACY_QUOTA_KV_FILE: file(`${url}/0\n`), WEBHOOK_QUEUE_FILE: file(`${url}/0?prefix=files-${port}\n`),
    });
    started.push(broker);
    // /readyz once the key set is held (a probe waits under a second for its fetch): what it says of the stores.
    const readyz = async () => {
      for (let i = 0; ; i += 1) {
        const answer = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as { status: string };
        if (answer.status === "ready" || i >= 50) return answer;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    return { broker, readyz };
  };

  beforeAll(async () => {
    fx = await tokenFixture();
    redis = await ownRedis();
    await redis.start();
    await redis.cli("config", "set", "requirepass", password);
    const { HOST_APP_PRIVATE_KEY: pem, ...rest } = fx.env;
    right = await start(password, { ...rest, HOST_APP_PRIVATE_KEY_FILE: file(pem!), PROCESS_TRIGGER_SECRET_FILE: file(`${secret}\n`) });
  }, 60_000);
  afterAll(async () => {
    for (const broker of started) await broker.stop();
    await redis?.stop();
    await fx?.sim.close();
  });

  it("mints with HOST_APP_PRIVATE_KEY_FILE and accepts the /releases secret from PROCESS_TRIGGER_SECRET_FILE", async () => {
    const answer = await postJson(`${right.broker.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });
    expect(answer.status).toBe(200);
    minted.push(answer.body.token as string);
    expect((await fetch(`${right.broker.url}/releases`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    expect((await fetch(`${right.broker.url}/releases`, { headers: { authorization: `Bearer ${secret}x` } })).status).toBe(401);
  });

  it("reaches a Redis that requires a password with the URLs from SERVICE_JWKS_CACHE_FILE, LEGACY_QUOTA_KV_FILE and WEBHOOK_QUEUE_FILE; a wrong password: each store unreachable", async () => {
    const authed = (...args: string[]) => redis.cli("-a", password, "--no-auth-warning", ...args);
    expect(await right.readyz()).toEqual({ status: "ready" });
    const answer = await postJson(`${right.broker.url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });
    expect(answer.status).toBe(200);
    minted.push(answer.body.token as string);
    // The key set's sealed snapshot reached that Redis (SERVICE_JWKS_CACHE), through the password.
    let keys = "";
    for (let i = 0; i < 100 && !keys.includes("jwks:"); i += 1) {
      keys = await authed("--scan");
      if (!keys.includes("jwks:")) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(keys).toContain(`tokensmith-jwks:jwks:${fx.sim.oidc.issuer}`);

    const wrong = await start("not-the-password-0123456789abcdefgh", fx.env);
    expect(await wrong.readyz()).toEqual({
      status: "ready",
      degraded: [
        { reason: "store_unreachable", setting: "SERVICE_JWKS_CACHE" },
        { reason: "store_unreachable", setting: "LEGACY_QUOTA_KV" },
        { reason: "store_unreachable", setting: "WEBHOOK_QUEUE" },
      ],
    });
  });

  it("no broker's log holds the App key, the /releases secret, the Redis password or a token it minted", async () => {
    for (const broker of started) await broker.stop();
    expect(started.length).toBeGreaterThan(0);
    expectNoSecrets(started.flatMap((broker) => broker.lines), [fx.env.HOST_APP_PRIVATE_KEY, secret, password, ...minted]);
  });
});
