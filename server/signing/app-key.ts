// Where the App's private key is (docs/deploying.md#keep-the-app-key-in-a-key-store): a PEM in the
// settings (HOST_APP_PRIVATE_KEY), or a key store reached through PKCS#11 (HOST_APP_KEY_URI). One
// signer per key source for the whole process; the PKCS#11 one signs in the token and never reads the key.
import { createHash, createPrivateKey, sign as signWithKey } from "node:crypto";
import type { Pkcs11KeyRef } from "./pkcs11-uri.js";
import { createPkcs11Signer, SignerError, type Pkcs11Signer } from "./pkcs11-signer.js";

export type AppKeySource =
  | { kind: "pem"; /** PKCS#8 PEM, never logged. */ pem: string; setting: string }
  | { kind: "pkcs11"; ref: Pkcs11KeyRef; /** From the PIN setting; the URI's own PIN wins. Never logged. */ pin: string | null; setting: string };

export interface AppKeySigner {
  /** RSASSA-PKCS1-v1_5 SHA-256 signature of `data`. Rejects with a SignerError naming the step. */
  sign(data: Buffer): Promise<Buffer>;
  /** Opens the key store and finds the key without signing (PEM: nothing to open). */
  open(): Promise<void>;
  /** The last failure (PKCS#11), or null. */
  readonly lastFailure: SignerError | null;
}

/** How the key is shown (a setting name and the URI without its query): never key material or a PIN. */
export function describeKeySource(source: AppKeySource): string {
  return source.kind === "pem" ? source.setting : `${source.setting} ${source.ref.shown}`;
}

// Keyed by the source object: the settings reader hands out the same one while the settings are unchanged.
const signers = new WeakMap<AppKeySource, AppKeySigner>();
// One PKCS#11 signer per distinct key (URI and PIN), so a settings re-parse reuses the open session.
const pkcs11Signers = new Map<string, Pkcs11Signer>();

export function signerFor(source: AppKeySource): AppKeySigner {
  let signer = signers.get(source);
  if (signer) return signer;
  if (source.kind === "pem") {
    const key = createPrivateKey(source.pem);
    signer = { sign: async (data) => signWithKey("sha256", data, key), open: async () => undefined, lastFailure: null };
  } else {
    const { ref } = source;
    const identity = createHash("sha256").update(JSON.stringify([ref.modulePath, ref.token, ref.object, ref.id?.toString("hex"), ref.pinValue, ref.pinSource, source.pin])).digest("hex");
    let pkcs11 = pkcs11Signers.get(identity);
    if (!pkcs11) {
      pkcs11 = createPkcs11Signer({ ref, pin: source.pin });
      pkcs11Signers.set(identity, pkcs11);
    }
    signer = pkcs11;
  }
  signers.set(source, signer);
  return signer;
}

/**
 * The label whose signature is the seal secret of a key-store key (docs/security.md#the-app-key-never-leaves-its-key-store):
 * RSASSA-PKCS1-v1_5 is deterministic, so every instance holding the key derives the same secret,
 * and no one without the key can.
 */
export const SEAL_SIGNATURE_LABEL = "tokensmith store seal v1";

const sealSecrets = new WeakMap<AppKeySource, Buffer>();
const sealing = new WeakMap<AppKeySource, Promise<void>>();

/**
 * The secret the store seals derive from (server/kv/store-seal.ts): the PEM text for a PEM key (as
 * before), the signature of SEAL_SIGNATURE_LABEL for a key-store key once the signer made it (null
 * until then: nothing is sealed or trusted, as without a store).
 */
export function sealSecretOf(source: AppKeySource): string | Buffer | null {
  if (source.kind === "pem") return source.pem;
  const known = sealSecrets.get(source);
  if (known) return known;
  primeSealSecret(source).catch(() => undefined);
  return null;
}

/** Makes the key-store seal secret (one signature), once per source; failures retry on the next call. */
export function primeSealSecret(source: AppKeySource): Promise<void> {
  if (source.kind === "pem" || sealSecrets.has(source)) return Promise.resolve();
  let pending = sealing.get(source);
  if (!pending) {
    pending = signerFor(source)
      .sign(Buffer.from(SEAL_SIGNATURE_LABEL))
      .then((signature) => {
        sealSecrets.set(source, signature);
      })
      .finally(() => sealing.delete(source));
    sealing.set(source, pending);
  }
  return pending;
}

export { SignerError };
