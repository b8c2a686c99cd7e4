// Compact JWS signing and App-JWT checking by hand with node:crypto rather than jose: tests need
// tokens jose refuses to produce (unknown `crit` extensions, alg "none", HS256 keyed with an RSA
// public key) and the simulator must judge App JWTs the way GitHub does, message for message.
import { KeyObject, createHmac, constants, sign as cryptoSign, verify as cryptoVerify } from "node:crypto";
import type { SigningKey } from "./types.js";

const b64url = (value: unknown): string =>
  Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

function toKeyObject(key: SigningKey): KeyObject | string | Buffer {
  if (key instanceof KeyObject) return key;
  if (typeof key === "string") return key;
  if (key instanceof Uint8Array) return Buffer.from(key);
  return KeyObject.from(key); // a WebCrypto CryptoKey, e.g. from jose.generateKeyPair
}

function hashFor(alg: string): string {
  const bits = alg.slice(2);
  if (!["256", "384", "512"].includes(bits)) throw new Error(`simulator: unsupported alg ${alg}`);
  return `sha${bits}`;
}

/** Sign `header.payload` with whatever alg the header names; unknown algs throw. */
export function signCompact(header: Record<string, unknown>, payload: Record<string, unknown>, key: SigningKey | undefined): string {
  const alg = String(header.alg);
  const input = `${b64url(header)}.${b64url(payload)}`;
  const data = Buffer.from(input);
  let signature: Buffer;
  if (alg === "none") {
    signature = Buffer.alloc(0);
  } else {
    if (key === undefined) throw new Error(`simulator: alg ${alg} needs a key`);
    const k = toKeyObject(key);
    if (alg.startsWith("HS")) {
      const secret = k instanceof KeyObject ? (k.type === "secret" ? k.export() : k.export({ type: "spki", format: "pem" })) : k;
      signature = createHmac(hashFor(alg), secret).update(data).digest();
    } else if (alg.startsWith("RS")) {
      signature = cryptoSign(hashFor(alg), data, k);
    } else if (alg.startsWith("PS")) {
      const hash = hashFor(alg);
      signature = cryptoSign(hash, data, { key: k as KeyObject, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: Number(alg.slice(2)) / 8 });
    } else if (alg.startsWith("ES")) {
      signature = cryptoSign(hashFor(alg), data, { key: k as KeyObject, dsaEncoding: "ieee-p1363" });
    } else if (alg === "EdDSA") {
      signature = cryptoSign(null, data, k);
    } else {
      throw new Error(`simulator: unsupported alg ${alg}`);
    }
  }
  return `${input}.${signature.toString("base64url")}`;
}

interface DecodedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: string;
  signature: Buffer;
}

/** Split and JSON-decode a compact JWT without verifying anything; undefined if malformed. */
function decodeJwt(token: string): DecodedJwt | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  try {
    const header = JSON.parse(Buffer.from(parts[0]!, "base64url").toString("utf8")) as unknown;
    const payload = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as unknown;
    if (!isObject(header) || !isObject(payload)) return undefined;
    return { header, payload, signingInput: `${parts[0]}.${parts[1]}`, signature: Buffer.from(parts[2]!, "base64url") };
  } catch {
    return undefined;
  }
}

export const GITHUB_JWT_MESSAGES = {
  undecodable: "A JSON web token could not be decoded",
  unknownApp: "Integration not found",
  exp: "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
  expTooFar: "'Expiration time' claim ('exp') is too far in the future",
  iat: "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
} as const;

/**
 * GitHub's App-JWT rules: RS256 by the App's key, iss = App id, exp in the future, iat at most
 * 60 s ahead, exp − iat ≤ 600. Returns the App id, or the message GitHub would answer with.
 */
export function checkAppJwt(
  token: string,
  publicKeyFor: (appId: string) => KeyObject | undefined,
  nowSeconds: number,
): { ok: true; appId: string } | { ok: false; reason: string } {
  const jwt = decodeJwt(token);
  if (!jwt || jwt.header.alg !== "RS256") return { ok: false, reason: GITHUB_JWT_MESSAGES.undecodable };
  const iss = jwt.payload.iss;
  if (typeof iss !== "string" && typeof iss !== "number") return { ok: false, reason: GITHUB_JWT_MESSAGES.undecodable };
  const appId = String(iss);
  const key = publicKeyFor(appId);
  if (!key) return { ok: false, reason: GITHUB_JWT_MESSAGES.unknownApp };
  if (!cryptoVerify("sha256", Buffer.from(jwt.signingInput), key, jwt.signature)) return { ok: false, reason: GITHUB_JWT_MESSAGES.undecodable };
  const { exp, iat } = jwt.payload;
  if (typeof exp !== "number" || exp <= nowSeconds) return { ok: false, reason: GITHUB_JWT_MESSAGES.exp };
  if (typeof iat !== "number" || iat > nowSeconds + 60) return { ok: false, reason: GITHUB_JWT_MESSAGES.iat };
  if (exp - iat > 600) return { ok: false, reason: GITHUB_JWT_MESSAGES.expTooFar };
  return { ok: true, appId };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
