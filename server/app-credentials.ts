import { createPrivateKey } from "node:crypto";

export interface AppCredentials {
  appId: string;
  /** PKCS#8 PEM, whatever form the setting used. Never logged. */
  privateKeyPem: string;
}

export type CredentialsParse =
  | { ok: true; credentials: AppCredentials }
  | { ok: false; missing: string[]; problem?: string };

/**
 * HOST_APP_ID + HOST_APP_PRIVATE_KEY (or the ENT_ pair). The key may be a multi-line PEM or one
 * line with literal `\n` escapes (docs/settings.md), PKCS#1 (`BEGIN RSA PRIVATE KEY`) or PKCS#8; it is
 * normalised to PKCS#8 once, so signing never re-parses it.
 */
export function parseAppCredentials(
  names: { id: string; key: string },
  rawId: string | undefined,
  rawKey: string | undefined,
): CredentialsParse {
  const appId = (rawId ?? "").trim();
  const keyText = (rawKey ?? "").trim().replace(/\\n/g, "\n").replace(/\r\n/g, "\n");
  const missing = [...(appId ? [] : [names.id]), ...(keyText ? [] : [names.key])];
  if (missing.length > 0) return { ok: false, missing };
  if (!/^[1-9][0-9]*$/.test(appId)) return { ok: false, missing: [], problem: `${names.id} is not a numeric App ID` };
  try {
    const key = createPrivateKey({ key: keyText, format: "pem" });
    if (key.asymmetricKeyType !== "rsa") return { ok: false, missing: [], problem: `${names.key} is not an RSA key` };
    const privateKeyPem = key.export({ type: "pkcs8", format: "pem" }).toString();
    return { ok: true, credentials: { appId, privateKeyPem } };
  } catch {
    // The parser's message could quote key material: never pass it on.
    return { ok: false, missing: [], problem: `${names.key} is not a readable PEM private key` };
  }
}
