// A SoftHSM2 token of a test's own (scripts/test-prerequisites.js installs softhsm2): a temporary
// token directory named by its own SOFTHSM2_CONF, one token, and the App's RSA key imported into it
// (the simulator's App key, so the simulator accepts the JWTs the token signs). The broker is
// spawned with `env` so its PKCS#11 module reads this configuration and no other.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createPrivateKey } from "node:crypto";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Where Debian's softhsm2 package puts the module (the first that exists). */
export const SOFTHSM_MODULE = ["/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so", "/usr/local/lib/softhsm/libsofthsm2.so"].find((path) => existsSync(path)) ?? "/usr/lib/softhsm/libsofthsm2.so";

export interface SoftHsmToken {
  dir: string;
  tokenDir: string;
  conf: string;
  label: string;
  pin: string;
  /** SOFTHSM2_CONF for the processes that open the token. */
  env: { SOFTHSM2_CONF: string };
  /** An RFC 7512 URI for an object of this token (the PIN not in it unless `pin` is given). */
  uri(options?: { object?: string; id?: string; pin?: string; pinSource?: string; modulePath?: string }): string;
  /** Imports an RSA private key (any PEM form) under `object` / `id`. */
  importKey(pem: string, object: string, id: string): void;
  /** Deletes the token's files (the token is gone for every process using it until `reinit`). */
  remove(): void;
  /** A fresh token with the same label and PIN (empty: import again). */
  reinit(): void;
  dispose(): void;
}

/**
 * A slow key store: test/support/slow-pkcs11.c built into `dir` (cc, the PKCS#11 headers pkcs11js
 * ships), forwarding to SoftHSM2 and waiting in C_Sign for the milliseconds written to `delayFile`.
 * Its processes need `env`.
 */
export function buildSlowModule(dir: string): { modulePath: string; delayFile: string; env: { SLOW_PKCS11_TARGET: string; SLOW_PKCS11_DELAY_FILE: string } } {
  const modulePath = join(dir, "slow-pkcs11.so");
  const delayFile = join(dir, "sign-delay-ms");
  const source = fileURLToPath(new URL("./slow-pkcs11.c", import.meta.url));
  const headers = join(dirname(createRequire(import.meta.url).resolve("pkcs11js/package.json")), "includes", "pkcs11");
  execFileSync("cc", ["-shared", "-fPIC", "-O2", `-I${headers}`, "-o", modulePath, source, "-ldl"], { stdio: ["ignore", "pipe", "pipe"] });
  writeFileSync(delayFile, "0\n");
  return { modulePath, delayFile, env: { SLOW_PKCS11_TARGET: SOFTHSM_MODULE, SLOW_PKCS11_DELAY_FILE: delayFile } };
}

const run = (conf: string, args: string[]) =>
  execFileSync("softhsm2-util", args, { env: { ...process.env, SOFTHSM2_CONF: conf }, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });

export function createSoftHsmToken(options: { label?: string; pin?: string } = {}): SoftHsmToken {
  const dir = mkdtempSync(join(tmpdir(), "tokensmith-softhsm-"));
  const tokenDir = join(dir, "tokens");
  const conf = join(dir, "softhsm2.conf");
  const label = options.label ?? "tokensmith-test";
  const pin = options.pin ?? "123456";
  writeFileSync(conf, `directories.tokendir = ${tokenDir}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`);
  const init = () => {
    mkdirSync(tokenDir, { recursive: true });
    run(conf, ["--init-token", "--free", "--label", label, "--so-pin", "so-pin-5522", "--pin", pin]);
  };
  init();
  return {
    dir,
    tokenDir,
    conf,
    label,
    pin,
    env: { SOFTHSM2_CONF: conf },
    uri({ object, id, pin: uriPin, pinSource, modulePath } = {}) {
      const path = [`token=${encodeURIComponent(label)}`, ...(object ? [`object=${encodeURIComponent(object)}`] : []), ...(id ? [`id=${id.replace(/(..)/g, "%$1")}`] : []), "type=private"];
      const query = [`module-path=${modulePath ?? SOFTHSM_MODULE}`, ...(uriPin ? [`pin-value=${encodeURIComponent(uriPin)}`] : []), ...(pinSource ? [`pin-source=${pinSource}`] : [])];
      return `pkcs11:${path.join(";")}?${query.join("&")}`;
    },
    importKey(pem, object, id) {
      const file = join(dir, `${object}.pk8.pem`);
      writeFileSync(file, createPrivateKey(pem).export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
      try {
        run(conf, ["--import", file, "--token", label, "--label", object, "--id", id, "--pin", pin]);
      } finally {
        rmSync(file, { force: true });
      }
    },
    remove() {
      rmSync(tokenDir, { recursive: true, force: true });
    },
    reinit() {
      rmSync(tokenDir, { recursive: true, force: true });
      init();
    },
    dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
