import { createPrivateKey } from "node:crypto";
import type { AppKeySource } from "./signing/app-key.js";
import { parsePkcs11Uri } from "./signing/pkcs11-uri.js";

export interface AppCredentials {
  appId: string;
  /** PKCS#8 PEM, whatever form the setting used; null when the key is in a key store (HOST_APP_KEY_URI). Never logged. */
  privateKeyPem: string | null;
  /** Where the key that signs the App JWT is (docs/deploying.md#keep-the-app-key-in-a-key-store). */
  key: AppKeySource;
  /** The second key of a rotation (…_NEXT), tried when the platform answers 401 to the first's JWT; null: none. */
  next: AppKeySource | null;
}

export type CredentialsParse =
  | { ok: true; credentials: AppCredentials }
  | { ok: false; missing: string[]; problem?: string };

/** The setting names of one platform's App: `HOST_APP_…` or `ENT_APP_…`. */
export interface AppSettingNames {
  id: string;
  key: string;
  uri?: string;
  pin?: string;
  keyNext?: string;
  uriNext?: string;
}

/** The raw values of one platform's App settings. */
export interface AppSettingValues {
  id: string | undefined;
  key: string | undefined;
  uri?: string | undefined;
  pin?: string | undefined;
  keyNext?: string | undefined;
  uriNext?: string | undefined;
}

type KeyParse = { ok: true; source: AppKeySource } | { ok: false; problem: string };

/**
 * The PEM setting: a multi-line PEM or one line with literal `\n` escapes (docs/settings.md),
 * PKCS#1 (`BEGIN RSA PRIVATE KEY`) or PKCS#8; normalised to PKCS#8 once, so signing never re-parses it.
 */
function parsePemKey(setting: string, keyText: string): KeyParse {
  try {
    const key = createPrivateKey({ key: keyText, format: "pem" });
    if (key.asymmetricKeyType !== "rsa") return { ok: false, problem: `${setting} is not an RSA key` };
    return { ok: true, source: { kind: "pem", pem: key.export({ type: "pkcs8", format: "pem" }).toString(), setting } };
  } catch {
    // The parser's message could quote key material: never pass it on.
    return { ok: false, problem: `${setting} is not a readable PEM private key` };
  }
}

function parseUriKey(setting: string, raw: string, pin: string | null): KeyParse {
  const parsed = parsePkcs11Uri(setting, raw);
  return parsed.ok ? { ok: true, source: { kind: "pkcs11", ref: parsed.ref, pin, setting } } : parsed;
}

const clean = (raw: string | undefined) => (raw ?? "").trim().replace(/\\n/g, "\n").replace(/\r\n/g, "\n");

/**
 * HOST_APP_ID with HOST_APP_PRIVATE_KEY or HOST_APP_KEY_URI (+ HOST_APP_KEY_PIN), or the ENT_ set;
 * the key store URI and the PEM are alternatives (both set is a problem: which key signs must not
 * be a guess). The rotation's second key (HOST_APP_PRIVATE_KEY_NEXT or HOST_APP_KEY_URI_NEXT) is optional.
 */
export function parseAppCredentials(names: AppSettingNames, values: AppSettingValues): CredentialsParse {
  const appId = (values.id ?? "").trim();
  const keyText = clean(values.key);
  const uriText = (values.uri ?? "").trim();
  const pin = (values.pin ?? "").replace(/\r?\n$/, "");
  const haveKey = keyText !== "" || uriText !== "";
  const missing = [...(appId ? [] : [names.id]), ...(haveKey ? [] : [names.key])];
  if (missing.length > 0) return { ok: false, missing };
  if (!/^[1-9][0-9]*$/.test(appId)) return { ok: false, missing: [], problem: `${names.id} is not a numeric App ID` };
  if (keyText !== "" && uriText !== "") return { ok: false, missing: [], problem: `${names.key} and ${names.uri} are both set: set one (the PEM or the key store)` };
  const first = uriText !== "" ? parseUriKey(names.uri!, uriText, pin || null) : parsePemKey(names.key, keyText);
  if (!first.ok) return { ok: false, missing: [], problem: first.problem };
  const nextKeyText = clean(values.keyNext);
  const nextUriText = (values.uriNext ?? "").trim();
  let next: AppKeySource | null = null;
  if (nextKeyText !== "" && nextUriText !== "") return { ok: false, missing: [], problem: `${names.keyNext} and ${names.uriNext} are both set: set one` };
  if (nextKeyText !== "" || nextUriText !== "") {
    const parsed = nextUriText !== "" ? parseUriKey(names.uriNext!, nextUriText, pin || null) : parsePemKey(names.keyNext!, nextKeyText);
    if (!parsed.ok) return { ok: false, missing: [], problem: parsed.problem };
    next = parsed.source;
  }
  const privateKeyPem = first.source.kind === "pem" ? first.source.pem : null;
  return { ok: true, credentials: { appId, privateKeyPem, key: first.source, next } };
}
