// The PKCS#11 binding missing (issue 42: "if it cannot build, the broker still installs and runs
// with PEM keys and says clearly that PKCS#11 is unavailable"): the built broker runs in a process
// where pkcs11js cannot be loaded (test/support/deny-modules.mjs, a test-only loader hook; no
// setting of the broker's). With a PEM key it starts and mints without ever loading the binding;
// with a key URI it starts, logs the "PKCS#11 unavailable" line, and answers 503
// app_key_unavailable (with Retry-After) while /readyz names the module step.
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { expectNoSecrets, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { freePort } from "./support/redis-server.js";
import { SOFTHSM_MODULE } from "./support/softhsm.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const DENY = fileURLToPath(new URL("./support/deny-modules.mjs", import.meta.url));
const PIN = "never-used-pin-4471";

let fx: TokenFixture;
const brokers: BrokerProcess[] = [];
const allLines: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
});
afterEach(async () => {
  for (const broker of brokers.splice(0)) {
    await broker.stop();
    allLines.push(...broker.lines);
  }
});
afterAll(async () => {
  await fx.sim.close();
  expectNoSecrets(allLines, [fx.app.privateKeyPem]);
  for (const line of allLines) expect(line).not.toMatch(/never-used-pin-4471|module-path=/);
});

/** The built broker in a process where pkcs11js cannot be loaded; its admin port for /readyz. */
async function withoutBinding(env: Record<string, string | undefined>): Promise<{ broker: BrokerProcess; admin: string }> {
  const port = await freePort();
  const broker = await spawnBroker({ ...env, NODE_OPTIONS: `--import=${DENY}`, TOKENSMITH_DENY_MODULES: "pkcs11js", ADMIN_PORT: String(port), ADMIN_HOST: "127.0.0.1" }, 30_000);
  brokers.push(broker);
  return { broker, admin: `http://127.0.0.1:${port}` };
}

const token = async (url: string) => postJson(`${url}/token`, { oidcToken: await fx.sim.oidc.sign(), owner: "octo-org", repo: "app" });

/** Waits for a log line that includes `text` (stdout trails the answers). */
async function lineWith(broker: BrokerProcess, text: string): Promise<string | undefined> {
  for (let i = 0; i < 100; i += 1) {
    const found = broker.lines.find((line) => line.includes(text));
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return undefined;
}

describe("the PKCS#11 binding cannot be loaded", () => {
  it("with a PEM key the broker starts, is ready and mints; the binding is never asked for", async () => {
    const { broker, admin } = await withoutBinding(fx.env);
    const minted = await token(broker.url);
    expect(minted.status).toBe(200);
    expect(fx.sim.tokens.get(minted.body.token as string)?.installationId).toBe(fx.installationId);
    expect((await fetch(`${admin}/readyz`)).status).toBe(200);
    expect(broker.lines.join("\n")).not.toMatch(/PKCS#11|may not be loaded/);
  });

  it("with a key URI the broker starts, logs 'PKCS#11 unavailable' and answers 503 app_key_unavailable; /readyz names the module step", async () => {
    const { HOST_APP_PRIVATE_KEY: _pem, ...rest } = fx.env;
    const uri = `pkcs11:token=tokensmith-test;object=app-key;type=private?module-path=${SOFTHSM_MODULE}`;
    const { broker, admin } = await withoutBinding({ ...rest, HOST_APP_KEY_URI: uri, HOST_APP_KEY_PIN: PIN });
    fx.sim.clearRequests();
    const line = await lineWith(broker, "PKCS#11 unavailable");
    expect(JSON.parse(line!)).toMatchObject({
      level: "error",
      setting: "HOST_APP_KEY_URI",
      msg: expect.stringMatching(/^PKCS#11 unavailable: the pkcs11js binding does not load \(pkcs11js may not be loaded in this process .*\): HOST_APP_KEY_URI cannot sign \(answering 503 app_key_unavailable\)/),
    });

    const answer = await token(broker.url);
    expect([answer.status, answer.body]).toEqual([503, { error: "app_key_unavailable" }]);
    expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
    const ready = await fetch(`${admin}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reasons: unknown[] }).reasons).toEqual([
      expect.objectContaining({ reason: "app_key_unavailable", setting: "HOST_APP_KEY_URI", step: "module", problem: expect.stringMatching(/^PKCS#11 unavailable: /) }),
    ]);
    // Nothing reached the platform: no JWT could be signed.
    expect(fx.sim.requests.filter((r) => r.path.endsWith("/installation") || r.path.endsWith("/access_tokens"))).toEqual([]);
  });
});
