// Derives the store seal of a key-store key in a process of its own, as one broker instance does
// (test/pkcs11-seal.test.ts runs two at once): `node build/test/support/seal-driver.js` with
// SOFTHSM2_CONF in its environment (the module reads it at C_Initialize) and `{ uri, pin }` as JSON
// on stdin. Prints, as JSON, whether a seal secret was there before the first signature, and
// SHA-256 fingerprints of the secret and of the two seal keys derived from it (never the secret).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { deriveSnapshotKey } from "../../server/oidc/snapshot-seal.js";
import { derivePolicySealKey } from "../../server/policy/policy-files.js";
import { primeSealSecret, sealSecretOf, type AppKeySource } from "../../server/signing/app-key.js";
import { parsePkcs11Uri } from "../../server/signing/pkcs11-uri.js";

export interface SealDriverResult {
  /** sealSecretOf before any signature: null, so nothing is sealed or trusted yet. */
  beforeSignature: null | "secret";
  secret: string;
  snapshotKey: string;
  policyKey: string;
}

const fingerprint = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

async function main() {
  const { uri, pin } = JSON.parse(readFileSync(0, "utf8")) as { uri: string; pin: string };
  const parsed = parsePkcs11Uri("HOST_APP_KEY_URI", uri);
  if (!parsed.ok) throw new Error(parsed.problem);
  const source: AppKeySource = { kind: "pkcs11", ref: parsed.ref, pin, setting: "HOST_APP_KEY_URI" };
  const beforeSignature = sealSecretOf(source) === null ? null : "secret";
  await primeSealSecret(source);
  const secret = sealSecretOf(source);
  if (secret === null) throw new Error("no seal secret after the signature");
  const result: SealDriverResult = { beforeSignature, secret: fingerprint(secret), snapshotKey: fingerprint(deriveSnapshotKey(secret)), policyKey: fingerprint(derivePolicySealKey(secret)) };
  process.stdout.write(JSON.stringify(result));
  // The PKCS#11 session holds the process open.
  process.exit(0);
}

await main();
