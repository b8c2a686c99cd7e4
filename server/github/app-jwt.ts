import { createPrivateKey } from "node:crypto";
import { RequestError } from "@octokit/request-error";
import { SignJWT } from "jose";
import type { AppCredentials } from "../app-credentials.js";

/** Back-dating of `iat` against clock drift, and the JWT's lifetime: GitHub allows at most 10 minutes. */
const APP_JWT_BACKDATE_SECONDS = 30;
const APP_JWT_LIFETIME_SECONDS = 600;

/**
 * App JWTs (RS256; `iss` = the App ID, `iat` = now − 30 s, `exp` = iat + 600 s, the claims
 * @octokit/auth-app signed), on the broker's own clock, and reused until a minute before they
 * expire, so steady-state exchanges sign nothing.
 * https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
 *
 * Cache (docs/operations.md#caches): key = the App's parsed credentials, value = the JWT, until exp − 60 s.
 * Signed here rather than by auth-app (no longer a dependency): auth-app reads the system clock,
 * and its installation-token path shares in-flight mints across callers through a module-level map whose key ignores
 * `refresh`, the App and the host, so two concurrent jobs could be handed one token.
 */
export function createAppJwtSigner(now: () => number) {
  // Keyed by the credentials object: the settings reader hands out the same one for as long as
  // HOST_APP_ID / HOST_APP_PRIVATE_KEY are unchanged, and a new one (so a new JWT) when they change.
  const cache = new WeakMap<AppCredentials, { jwt: string; reuseUntil: number }>();
  // Requests that miss the cache together share one signature (at start-up, 64 would sign 64).
  const signing = new WeakMap<AppCredentials, Promise<string>>();
  let signed = 0;
  const sign = async (app: AppCredentials): Promise<string> => {
    const iat = Math.floor(now() / 1000) - APP_JWT_BACKDATE_SECONDS;
    const exp = iat + APP_JWT_LIFETIME_SECONDS;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "RS256", typ: "JWT" })
      .setIssuer(app.appId)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(createPrivateKey(app.privateKeyPem));
    signed += 1;
    cache.set(app, { jwt: token, reuseUntil: exp * 1000 - 60_000 });
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
     * its clock disagree), drop it so the next call signs afresh. Looks through a BrokerError to
     * the platform error it wraps.
     */
    noteFailure(app: AppCredentials, error: unknown): void {
      const platformError = error instanceof RequestError ? error : (error as { cause?: unknown } | null)?.cause;
      if (platformError instanceof RequestError && platformError.status === 401 && platformError.response) cache.delete(app);
    },
    get signedCount(): number {
      return signed;
    },
  };
}

export type AppJwtSigner = ReturnType<typeof createAppJwtSigner>;
