// RFC 7512 `pkcs11:` URIs naming the App's private key in a key store
// (docs/deploying.md#keep-the-app-key-in-a-key-store). Only what a signing key needs is read: the
// token (`token`, `serial`, `manufacturer`, `model`, or `slot-id`), the object (`object` label
// and/or `id`), `type=private`; in the query `module-path` (required: the PKCS#11 library),
// `pin-value` or `pin-source=file:…`. https://www.rfc-editor.org/rfc/rfc7512

export interface Pkcs11KeyRef {
  /** The PKCS#11 library (`module-path`). */
  modulePath: string;
  token: { label?: string; serial?: string; manufacturer?: string; model?: string; slotId?: number };
  /** CKA_LABEL (`object`). */
  object?: string;
  /** CKA_ID (`id`), as bytes. */
  id?: Buffer;
  /** `pin-value`, never logged. */
  pinValue?: string;
  /** `pin-source` as a file path (`file:` scheme or a plain path). */
  pinSource?: string;
  /** The URI with its query and any secret left out: what logs, doctor and /readyz show. */
  shown: string;
}

export type Pkcs11UriParse = { ok: true; ref: Pkcs11KeyRef } | { ok: false; problem: string };

const PATH_ATTRIBUTES = new Set(["token", "manufacturer", "serial", "model", "library-manufacturer", "library-description", "library-version", "slot-description", "slot-manufacturer", "slot-id", "object", "id", "type"]);
const QUERY_ATTRIBUTES = new Set(["module-path", "module-name", "pin-value", "pin-source"]);

/** Percent-encoded bytes (RFC 7512's `id`): each `%XX` one byte, any other character its own ASCII byte. */
function decodeBytes(text: string): Buffer | null {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === "%") {
      const hex = text.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return null;
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      const code = text.charCodeAt(i);
      if (code > 0x7e || code < 0x21) return null;
      bytes.push(code);
    }
  }
  return Buffer.from(bytes);
}

function decode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/**
 * What an operator may see of a key URI: the path attributes that name the token and object, and
 * `?…` where there was a query (module path, PIN). Built from the raw text without decoding, so
 * it is safe even for a URI that does not parse.
 */
export function redactKeyUri(raw: string): string {
  const text = raw.trim();
  if (!text.toLowerCase().startsWith("pkcs11:")) return "(not a pkcs11: URI)";
  const [path = "", query] = text.slice("pkcs11:".length).split("?", 2);
  const kept = path.split(";").filter((part) => !/^pin-/i.test(part) && /^[a-z-]+=/i.test(part));
  return `pkcs11:${kept.join(";")}${query !== undefined ? "?…" : ""}`;
}

/** Parses `raw` (a setting's value, `name` for the messages); the messages never quote the value. */
export function parsePkcs11Uri(name: string, raw: string): Pkcs11UriParse {
  const text = raw.trim();
  if (!text.toLowerCase().startsWith("pkcs11:")) return { ok: false, problem: `${name} is not a pkcs11: URI (RFC 7512)` };
  const [path = "", query = ""] = text.slice("pkcs11:".length).split("?", 2);
  const shown = redactKeyUri(text);
  const token: Pkcs11KeyRef["token"] = {};
  const ref: Omit<Pkcs11KeyRef, "modulePath" | "shown"> & { modulePath?: string } = { token };
  for (const part of path.split(";").filter(Boolean)) {
    const eq = part.indexOf("=");
    const key = (eq < 0 ? part : part.slice(0, eq)).toLowerCase();
    const rawValue = eq < 0 ? "" : part.slice(eq + 1);
    if (!PATH_ATTRIBUTES.has(key)) return { ok: false, problem: `${name}: unknown path attribute ${JSON.stringify(key.slice(0, 40))}` };
    if (key === "id") {
      const value = decodeBytes(rawValue);
      if (value === null) return { ok: false, problem: `${name}: id is not percent-encoded bytes` };
      ref.id = value;
      continue;
    }
    const value = decode(rawValue);
    if (value === null) return { ok: false, problem: `${name}: ${key} is not percent-encoded text` };
    if (key === "token") token.label = value;
    else if (key === "serial") token.serial = value;
    else if (key === "manufacturer") token.manufacturer = value;
    else if (key === "model") token.model = value;
    else if (key === "slot-id") {
      if (!/^[0-9]+$/.test(value)) return { ok: false, problem: `${name}: slot-id is not a number` };
      token.slotId = Number(value);
    } else if (key === "object") ref.object = value;
    else if (key === "type" && value !== "private") return { ok: false, problem: `${name}: type must be private (the App's signing key)` };
  }
  for (const part of query.split("&").filter(Boolean)) {
    const eq = part.indexOf("=");
    const key = (eq < 0 ? part : part.slice(0, eq)).toLowerCase();
    const value = decode(eq < 0 ? "" : part.slice(eq + 1));
    if (!QUERY_ATTRIBUTES.has(key)) return { ok: false, problem: `${name}: unknown query attribute ${JSON.stringify(key.slice(0, 40))}` };
    if (value === null) return { ok: false, problem: `${name}: ${key} is not percent-encoded text` };
    if (key === "module-path") ref.modulePath = value;
    else if (key === "module-name") return { ok: false, problem: `${name}: give the library as module-path (module-name is not searched for)` };
    else if (key === "pin-value") ref.pinValue = value;
    else if (key === "pin-source") ref.pinSource = value.startsWith("file:") ? value.replace(/^file:(\/\/)?/, "") : value;
  }
  if (!ref.modulePath) return { ok: false, problem: `${name} has no module-path (the PKCS#11 library to load)` };
  if (ref.object === undefined && ref.id === undefined) return { ok: false, problem: `${name} names no key: give object= (its label) and/or id=` };
  if (ref.pinValue !== undefined && ref.pinSource !== undefined) return { ok: false, problem: `${name} has both pin-value and pin-source: give one` };
  return { ok: true, ref: { ...ref, modulePath: ref.modulePath, shown } };
}
