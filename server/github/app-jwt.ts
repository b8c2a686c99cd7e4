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
 * Every platform call made with an App JWT goes through `withJwt`, the one place that handles the
 * platform refusing the JWT itself (401): the JWT is dropped so the next call signs afresh, and
 * with a second key (…_NEXT, docs/deploying.md#7-rotating-the-apps-private-key-without-downtime)
 * the refused call is sent once more with a JWT of the other key, which then signs the App's JWTs.
 */
export function createAppJwtSigner(now: () => number) {
  interface Signed {
    jwt: string;
    reuseUntil: number;
    key: AppKeySource;
  }
  // Keyed by the credentials object: the settings reader hands out the same one for as long as
  // HOST_APP_ID / the key settings are unchanged, and a new one (so a new JWT) when they change.
  const cache = new WeakMap<AppCredentials, Signed>();
  // Requests that miss the cache together share one signature (at start-up, 64 would sign 64).
  const signing = new WeakMap<AppCredentials, Promise<Signed>>();
  // Which key signs: the first until the platform refuses its JWT while a second key is set.
  const active = new WeakMap<AppCredentials, AppKeySource>();
  let signed = 0;
  const sign = async (app: AppCredentials): Promise<Signed> => {
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
    const entry = { jwt: token, reuseUntil: exp * 1000 - 60_000, key };
    cache.set(app, entry);
    return entry;
  };
  const current = (app: AppCredentials): Promise<Signed> => {
    const hit = cache.get(app);
    if (hit && now() < hit.reuseUntil) return Promise.resolve(hit);
    let pending = signing.get(app);
    if (!pending) {
      pending = sign(app).finally(() => signing.delete(app));
      signing.set(app, pending);
    }
    return pending;
  };
  /**
   * The platform refused `refused` (401: our clock and its clock disagree, or the key was deleted
   * in the App's settings): it is not reused, and with a second key the other one signs from now
   * on. Concurrent calls refused on the same JWT switch keys once, not back and forth, and a newer
   * JWT (the other key's) stays cached.
   */
  const drop = (app: AppCredentials, refused: Signed): void => {
    if (cache.get(app) === refused) cache.delete(app);
    if (app.next && (active.get(app) ?? app.key) === refused.key) active.set(app, refused.key === app.next ? app.key : app.next);
  };
  return {
    /** The App's JWT as it would be sent now (cached or signed); for a call that is described, not sent. */
    async jwtFor(app: AppCredentials): Promise<string> {
      return (await current(app)).jwt;
    },
    /**
     * `call` with the App's JWT. When the platform refuses that JWT (a 401 it answered, also
     * wrapped in a BrokerError's cause) and a second key is set, `call` runs once more with a JWT
     * of the other key: a rotation costs no request. A second refusal (neither key accepted), or a
     * refusal with one key only, is thrown as `call` threw it. A key store that cannot sign is
     * 503 app_key_unavailable, before `call` runs.
     */
    async withJwt<T>(app: AppCredentials, call: (jwt: string) => Promise<T>): Promise<T> {
      const first = await current(app);
      try {
        return await call(first.jwt);
      } catch (error) {
        if (!refusedJwt(error)) throw error;
        drop(app, first);
        if (!app.next) throw error;
        const second = await current(app);
        // Another call's refusal already switched back to this key: nothing new to try.
        if (second.key === first.key) throw error;
        try {
          return await call(second.jwt);
        } catch (again) {
          if (refusedJwt(again)) drop(app, second);
          throw again;
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

/** The platform refused the App JWT itself: a 401 it answered, possibly wrapped in a BrokerError's cause. */
function refusedJwt(error: unknown): boolean {
  const platformError = error instanceof RequestError ? error : (error as { cause?: unknown } | null)?.cause;
  return platformError instanceof RequestError && platformError.status === 401 && platformError.response !== undefined;
}

export type AppJwtSigner = ReturnType<typeof createAppJwtSigner>;
