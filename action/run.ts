// The main step: check the inputs, make sure the runner can hand out OIDC tokens, exchange one at
// the broker, then mask → output → save state (in that order: nothing may print the token before
// the runner knows to hide it).
import { ActionFailure } from "./action-failure.js";
import { readInputs } from "./inputs.js";
import { requestToken } from "./request-token.js";
import { STATE, type Env, type Http, type RetryPolicy, type Toolkit } from "./toolkit.js";

export interface RunDeps {
  core: Toolkit;
  env: Env;
  http: Http;
  retry: RetryPolicy;
  sleep: (ms: number) => Promise<void>;
}

// Without `permissions: id-token: write` the runner does not set these two variables
// (https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect#adding-permissions-settings).
const NO_ID_TOKEN =
  "tokensmith: the runner offers this job no OIDC token: add `permissions: id-token: write` to the job (or the workflow) that runs this step. " +
  "(ACTIONS_ID_TOKEN_REQUEST_URL / ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set; pull requests from forks never get them.)";

export async function run(deps: RunDeps): Promise<void> {
  const { core } = deps;
  try {
    const inputs = readInputs(core, deps.env);
    if (!deps.env.ACTIONS_ID_TOKEN_REQUEST_URL || !deps.env.ACTIONS_ID_TOKEN_REQUEST_TOKEN) throw new ActionFailure(NO_ID_TOKEN);

    const answer = await requestToken(deps, inputs);

    core.setSecret(answer.token);
    core.setOutput("token", answer.token);
    core.setOutput("expires-at", answer.expires_at);
    core.setOutput("repository", answer.repository);
    // Post revokes the token; when it will not, the token is not written to the state file at all.
    if (!inputs.skipTokenRevoke) {
      core.saveState(STATE.token, answer.token);
      core.saveState(STATE.expiresAt, answer.expires_at);
    }
    core.info(`tokensmith: got a token for ${answer.repository}, expires at ${answer.expires_at}`);
  } catch (error) {
    core.setFailed(error instanceof ActionFailure ? error.message : `tokensmith: ${error instanceof Error ? error.message : String(error)}`);
  }
}
