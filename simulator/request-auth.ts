// Judging the Authorization header once, when a request arrives, so the verdict is both recorded
// (sim.requests[i].auth) and enforced by requireApp / requireInstallation in route handlers.
import { DOCS_ROOT, SimulatorHttpError } from "./router.js";
import { GITHUB_JWT_MESSAGES, checkAppJwt } from "./jws.js";
import type { GithubState } from "./github-state.js";
import type { AppState, InstallationState, IssuedToken, RequestAuth, RouteContext } from "./types.js";

const BAD_CREDENTIALS = "Bad credentials";
const REQUIRES_AUTH = "Requires authentication";

// A stateless installation token (`ghs_<app id>_<JWT>`) has a JWT's dots: its prefix says what it is.
const looksLikeJwt = (credential: string) => !/^gh[a-z]_/.test(credential) && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(credential);

export function judgeAuthorization(header: string | undefined, state: GithubState, nowMs: number): RequestAuth {
  if (!header || !header.trim()) return { kind: "none" };
  const match = /^\s*(bearer|token)\s+(\S+)\s*$/i.exec(header);
  if (!match) return { kind: "invalid", reason: BAD_CREDENTIALS };
  const [, scheme, credential] = match as unknown as [string, string, string];
  // GitHub only takes App JWTs as Bearer; "token <jwt>" is just a bad token.
  if (scheme.toLowerCase() === "bearer" && looksLikeJwt(credential)) {
    const verdict = checkAppJwt(
      credential,
      (appId) => (/^\d+$/.test(appId) ? state.apps.get(Number(appId))?.publicKey : undefined),
      Math.floor(nowMs / 1000),
    );
    return verdict.ok ? { kind: "app", appId: verdict.appId } : { kind: "invalid", reason: verdict.reason };
  }
  if (state.liveToken(credential)) return { kind: "installation", token: credential };
  return { kind: "invalid", reason: BAD_CREDENTIALS };
}

function unauthorized(message: string): SimulatorHttpError {
  return new SimulatorHttpError(401, { message, documentation_url: DOCS_ROOT });
}

/** App-JWT routes: anything but a valid App JWT gets GitHub's 401 for the problem found. */
export function requireApp(ctx: RouteContext, state: GithubState): AppState {
  const { auth } = ctx;
  if (auth.kind === "app") {
    const app = state.apps.get(Number(auth.appId));
    if (app) return app;
    throw unauthorized(GITHUB_JWT_MESSAGES.unknownApp);
  }
  // A JWT-specific verdict is passed on; anything else (no header, an installation token, junk)
  // is, to an App-JWT route, just something GitHub cannot decode as a JWT.
  const jwtMessages: readonly string[] = Object.values(GITHUB_JWT_MESSAGES);
  if (auth.kind === "invalid" && jwtMessages.includes(auth.reason)) throw unauthorized(auth.reason);
  throw unauthorized(GITHUB_JWT_MESSAGES.undecodable);
}

/** Installation-token routes; re-checks liveness since a token may be revoked mid-request. */
export function requireInstallation(
  ctx: RouteContext,
  state: GithubState,
): { token: string; issued: IssuedToken; installation: InstallationState } {
  const { auth } = ctx;
  if (auth.kind === "none") throw unauthorized(REQUIRES_AUTH);
  if (auth.kind !== "installation") throw unauthorized(BAD_CREDENTIALS);
  const issued = state.liveToken(auth.token);
  const installation = issued && state.installations.get(issued.installationId);
  if (!issued || !installation) throw unauthorized(BAD_CREDENTIALS);
  return { token: auth.token, issued, installation };
}
