// RFC 7512 key URIs (server/signing/pkcs11-uri.ts) and the App settings that carry them
// (server/app-credentials.ts): what parses, what each mistake says (naming the setting, never
// quoting it), and the redaction every printed URI goes through: no query (module path, PIN)
// and no pin attribute survive it, whatever the text.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { parseAppCredentials } from "../server/app-credentials.js";
import { parsePkcs11Uri, redactKeyUri } from "../server/signing/pkcs11-uri.js";

const MODULE = "/usr/lib/softhsm/libsofthsm2.so";

describe("parsePkcs11Uri", () => {
  it("reads token, object, id (as bytes), type and the query", () => {
    const parsed = parsePkcs11Uri("HOST_APP_KEY_URI", `pkcs11:token=My%20Token;object=app-key;id=%01%a1z;type=private?module-path=${MODULE}&pin-value=s3cret`);
    expect(parsed).toEqual({
      ok: true,
      ref: {
        modulePath: MODULE, token: { label: "My Token" }, object: "app-key", id: Buffer.from([1, 0xa1, 0x7a]), pinValue: "s3cret",
        shown: "pkcs11:token=My%20Token;object=app-key;id=%01%a1z;type=private?…",
      },
    });
  });

  it("pin-source as a file: URI or a path", () => {
    for (const source of ["file:/run/secrets/pin", "file:///run/secrets/pin", "/run/secrets/pin"]) {
      const parsed = parsePkcs11Uri("X", `pkcs11:object=k?module-path=${MODULE}&pin-source=${source}`);
      expect(parsed.ok && parsed.ref.pinSource).toBe("/run/secrets/pin");
    }
  });

  it.each([
    ["not-a-uri", "X is not a pkcs11: URI (RFC 7512)"],
    ["pkcs11:object=k", "X has no module-path (the PKCS#11 library to load)"],
    [`pkcs11:token=t?module-path=${MODULE}`, "X names no key: give object= (its label) and/or id="],
    [`pkcs11:object=k;type=public?module-path=${MODULE}`, "X: type must be private (the App's signing key)"],
    [`pkcs11:object=k;colour=red?module-path=${MODULE}`, `X: unknown path attribute "colour"`],
    [`pkcs11:object=k?module-path=${MODULE}&pin-value=a&pin-source=/p`, "X has both pin-value and pin-source: give one"],
    [`pkcs11:id=%zz?module-path=${MODULE}`, "X: id is not percent-encoded bytes"],
    [`pkcs11:object=k?module-name=softhsm2`, "X: give the library as module-path (module-name is not searched for)"],
  ])("%s → %s", (raw, problem) => {
    expect(parsePkcs11Uri("X", raw)).toEqual({ ok: false, problem });
  });

  it("redaction keeps no query and no pin attribute, for any text", () => {
    fc.assert(fc.property(fc.string(), fc.string(), fc.string(), (path, query, pin) => {
      const shown = redactKeyUri(`pkcs11:${path};pin-value=${pin}?${query}`);
      expect(shown.includes("?") ? shown.endsWith("?…") : true).toBe(true);
      expect(shown).not.toMatch(/pin-(value|source)=/i);
      if (query.length > 3) expect(shown).not.toContain(query);
    }));
  });
});

describe("the App's key settings", () => {
  const NAMES = { id: "HOST_APP_ID", key: "HOST_APP_PRIVATE_KEY", uri: "HOST_APP_KEY_URI", pin: "HOST_APP_KEY_PIN", keyNext: "HOST_APP_PRIVATE_KEY_NEXT", uriNext: "HOST_APP_KEY_URI_NEXT" };
  const uri = `pkcs11:token=t;object=k?module-path=${MODULE}`;

  it("a key URI needs no PEM; the PIN setting is kept for it (a trailing newline dropped)", () => {
    const parsed = parseAppCredentials(NAMES, { id: "42", key: undefined, uri, pin: "1234\n" });
    expect(parsed.ok && parsed.credentials.privateKeyPem).toBeNull();
    expect(parsed.ok && parsed.credentials.key).toMatchObject({ kind: "pkcs11", pin: "1234", setting: "HOST_APP_KEY_URI" });
    expect(parsed.ok && parsed.credentials.next).toBeNull();
  });

  it("neither set: HOST_APP_PRIVATE_KEY is missing; both set: a problem naming both", () => {
    expect(parseAppCredentials(NAMES, { id: "42", key: undefined })).toEqual({ ok: false, missing: ["HOST_APP_PRIVATE_KEY"] });
    expect(parseAppCredentials(NAMES, { id: "42", key: "-----BEGIN PRIVATE KEY-----", uri })).toEqual({
      ok: false, missing: [], problem: "HOST_APP_PRIVATE_KEY and HOST_APP_KEY_URI are both set: set one (the PEM or the key store)",
    });
  });

  it("the rotation's second key: a URI or a PEM, checked like the first", () => {
    const parsed = parseAppCredentials(NAMES, { id: "42", key: undefined, uri, uriNext: uri.replace("object=k", "object=k2") });
    expect(parsed.ok && parsed.credentials.next).toMatchObject({ kind: "pkcs11", setting: "HOST_APP_KEY_URI_NEXT", ref: { object: "k2" } });
    expect(parseAppCredentials(NAMES, { id: "42", key: undefined, uri, keyNext: "not a pem" })).toEqual({ ok: false, missing: [], problem: "HOST_APP_PRIVATE_KEY_NEXT is not a readable PEM private key" });
  });
});
