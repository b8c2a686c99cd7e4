// The post step: revoke the token main saved, unless the user asked not to or it has expired
// anyway. A failed revocation is a warning, never a failed job: the token dies within the hour.
// https://docs.github.com/en/rest/apps/installations#revoke-an-installation-access-token
import { ActionFailure } from "./action-failure.js";
import { networkDetail } from "./http.js";
import { readApiUrl, readBoolean } from "./inputs.js";
import { STATE, type Env, type Http, type Toolkit } from "./toolkit.js";

interface PostDeps {
  core: Pick<Toolkit, "getInput" | "getState" | "info" | "warning">;
  env: Env;
  http: Http;
  now: () => number;
}

export async function post(deps: PostDeps): Promise<void> {
  const { core } = deps;
  try {
    if (readBoolean("skip-token-revoke", core.getInput("skip-token-revoke"))) {
      core.info("tokensmith: token revocation skipped (skip-token-revoke: true)");
      return;
    }
    const token = core.getState(STATE.token);
    if (!token) {
      core.info("tokensmith: no token to revoke");
      return;
    }
    const expiresAt = Date.parse(core.getState(STATE.expiresAt));
    if (Number.isFinite(expiresAt) && expiresAt <= deps.now()) {
      core.info("tokensmith: the token has already expired; nothing to revoke");
      return;
    }
    const failure = await revokeToken(deps.http, readApiUrl(core.getInput("github-api-url"), deps.env), token);
    if (failure === undefined) core.info("tokensmith: token revoked");
    else core.warning(`tokensmith: token revocation failed: ${failure}`);
  } catch (error) {
    if (error instanceof ActionFailure) core.warning(error.message);
    else core.warning(`tokensmith: token revocation failed: ${networkDetail(error)}`);
  }
}

/**
 * `DELETE /installation/token` with the token itself at `apiBase` (inputs.ts readApiUrl: the
 * github-api-url input, GHES included): undefined when the platform revoked it (204), else why not
 * (post and main print it through safe-toolkit.ts: one line, whatever the platform wrote).
 */
export async function revokeToken(http: Http, apiBase: string, token: string, limits?: { timeoutMs?: number }): Promise<string | undefined> {
  try {
    const { status, body } = await http.request("DELETE", `${apiBase}/installation/token`, null, {
      authorization: `Bearer ${token}`,
      accept: "application/vnd.github+json",
      "x-github-api-version": "2022-11-28",
    }, limits);
    return status === 204 ? undefined : `HTTP ${status}${platformMessage(body)}`;
  } catch (error) {
    return networkDetail(error);
  }
}

/** The platform's `message` field, when the body has one. */
function platformMessage(body: string): string {
  try {
    const message = (JSON.parse(body) as { message?: unknown } | null)?.message;
    return typeof message === "string" ? ` ${message}` : "";
  } catch {
    return "";
  }
}
