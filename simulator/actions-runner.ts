// The Actions runner's ID-token endpoint (ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN), so the action's
// own code path — core.getIDToken() — can be exercised against this issuer.
import { randomBytes } from "node:crypto";
import type { Router } from "./router.js";
import type { ActionsRunner, Claims, OidcIssuer } from "./types.js";

const ID_TOKEN_PATH = "/_actions/idtoken";

export function createActionsRunner(url: string, router: Router, oidc: OidcIssuer): ActionsRunner {
  const runner: ActionsRunner = {
    requestUrl: `${url}${ID_TOKEN_PATH}?api-version=2.0`,
    requestToken: randomBytes(24).toString("base64url"),
    claims: {},
  };
  router.add("GET", ID_TOKEN_PATH, async (ctx) => {
    const presented = /^Bearer\s+(\S+)$/i.exec(String(ctx.headers.authorization ?? ""))?.[1];
    if (presented !== runner.requestToken) return { status: 401, body: { message: "Unauthorized" } };
    const claims: Partial<Claims> & Record<string, unknown> = { ...runner.claims };
    // GitHub's default audience is the repository owner's URL when none is asked for.
    const owner = typeof claims.repository_owner === "string" ? claims.repository_owner : "octo-org";
    claims.aud = ctx.query.audience ?? claims.aud ?? `https://github.com/${owner}`;
    return { status: 200, body: { value: await oidc.sign(claims) } };
  });
  return runner;
}
