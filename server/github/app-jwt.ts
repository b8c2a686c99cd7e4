import { createPrivateKey } from "node:crypto";
import { RequestError } from "@octokit/request-error";
import { SignJWT } from "jose";
import { BrokerError } from "../../shared/broker-error.js";
import type { AppCredentials } from "../app-credentials.js";
import { signerFor, SignerError, type AppKeySource } from "../signing/app-key.js";

/** Back-dating of `iat` against clock drift, and the JWT's lifetime: GitHub allows at most 10 minutes. */
export const APP_JWT_BACKDATE_SECONDS = 30;
export const APP_JWT_LIFETIME_SECONDS = 600;
/** Retry-After of a 503 app_key_unavailable: the key store is tried again on the next request after it. */
export const KEY_STORE_RETRY_AFTER_S = 5;

const base64url = (data: Buffer | string) => Buffer.from(data).toString("base64url");

/**
 * An App JWT signed by `key`: with a PEM exactly as before (jose), with a key-store key by the
 * store's C_Sign over the JWS signing input (RS256 = RSASSA-PKCS1-v1_5 with SHA-256, the same bytes).
 */
export async function signAppJwt(key: AppKeySource, appId: string, iat: number, exp: number): Promise<string> {
  if (key.kind === "pem") {
    return new SignJWT({})
      .setProtectedHeader({ alg: "RS256", typ: "JWT" })
      .setIssuer(appId)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(createPrivateKey(key.pem));
  }
  const input = `${base64url(JSON.stringify({ alg: "RS256", typ: "JWT" }))}.${base64url(JSON.stringify({ iss: appId, iat, exp }))}`;
  const signature = await signerFor(key).sign(Buffer.from(input));
  return `${input}.${base64url(signature)}`;
}

/**
 * App JWTs (RS256; `iss` = the App ID, `iat` = now − 30 s, `exp` = iat + 600 s, the claims
 * @octokit/auth-app signed), on the broker's own clock, and reused until a minute before they
 * expire, so steady-state exchanges sign nothing (and a slow key store costs nothing per request).
 * https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
 *
 * Cache (docs/operations.md#caches): key = the App's parsed credentials, value = the JWT, until exp − 60 s.
 * Signed here rather than by auth-app (no longer a dependency): auth-app reads the system clock,
 * and its installation-token path shares in-flight mints across callers through a module-level map whose key ignores
 * `refresh`, the App and the host, so two concurrent jobs could be handed one token.
 *
 * Rotation (docs/deploying.md#7-rotating-the-apps-private-key-without-downtime): with a second key (…_NEXT), a 401 from the
 * platform to a JWT of one key makes the next JWT be signed with the other.
 */
export function createAppJwtSigner(now: () => number) {
  // Keyed by the credentials object: the settings reader hands out the same one for as long as
  // HOST_APP_ID / the key settings are unchanged, and a new one (so a new JWT) when they change.
  const cache = new WeakMap<AppCredentials, { jwt: string; reuseUntil: number; key: AppKeySource }>();
  // Requests that miss the cache together share one signature (at start-up, 64 would sign 64).
  const signing = new WeakMap<AppCredentials, Promise<string>>();
  // Which key signs: the first until the platform refuses its JWT while a second key is set.
  const active = new WeakMap<AppCredentials, AppKeySource>();
  let signed = 0;
  const sign = async (app: AppCredentials): Promise<string> => {
    const iat = Math.floor(now() / 1000) - APP_JWT_BACKDATE_SECONDS;
    const exp = iat + APP_JWT_LIFETIME_SECONDS;
    const key = active.get(app) ?? app.key;
    let token: string;
    try {
      token = await signAppJwt(key, app.appId, iat, exp);
    } catch (error) {
      if (error instanceof SignerError) {
        throw new BrokerError("app_key_unavailable", { retryAfter: KEY_STORE_RETRY_AFTER_S, detail: `${key.setting}: ${error.message}`, cause: error });
      }
      throw error;
    }
    signed += 1;
    cache.set(app, { jwt: token, reuseUntil: exp * 1000 - 60_000, key });
    return token;
  };
  return {
    jwtFor(app: AppCredentials): Promise<string> {
      const hit = cache.get(app);
      if (hit && now() < hit.reuseUntil) return Promise.resolve(hit.jwt);
      let pending = signing.get(app);
      if (!pending) {
        pending = sign(app).finally(() => signing.delete(app));
        signing.set(app, pending);
      }
      return pending;
    },
    /**
     * After a failed App-JWT call: if the platform refused the JWT itself (401, e.g. our clock and
     * its clock disagree, or the key was revoked during a rotation), drop it so the next call signs
     * afresh, with the other key when a second one is set. Looks through a BrokerError to the
     * platform error it wraps.
     */
    noteFailure(app: AppCredentials, error: unknown): void {
      const platformError = error instanceof RequestError ? error : (error as { cause?: unknown } | null)?.cause;
      if (platformError instanceof RequestError && platformError.status === 401 && platformError.response) {
        const hit = cache.get(app);
        cache.delete(app);
        if (app.next) {
          const refused = hit?.key ?? active.get(app) ?? app.key;
          active.set(app, refused === app.next ? app.key : app.next);
        }
      }
    },
    /** The setting of the key that signs the App's JWTs now (the first, or …_NEXT after a 401). */
    activeKey(app: AppCredentials): AppKeySource {
      return active.get(app) ?? app.key;
    },
    get signedCount(): number {
      return signed;
    },
  };
}

export type AppJwtSigner = ReturnType<typeof createAppJwtSigner>;
