// The main step: check the inputs, make sure the runner can hand out OIDC tokens, exchange one at
// the broker, check the answer (check-answer.ts), then mask → output → save state (in that order:
// nothing may print the token before the runner knows to hide it). An answer that fails the check
// fails the step, and the token it carried, when usable, is masked first and revoked at once.
import { ActionFailure } from "./action-failure.js";
import { checkAnswer, usableToken } from "./check-answer.js";
import { readInputs } from "./inputs.js";
import { requestToken } from "./request-token.js";
import { revokeToken } from "./revoke-token.js";
import { STATE, type Env, type Http, type RetryPolicy, type Toolkit } from "./toolkit.js";

interface RunDeps {
  core: Toolkit;
  env: Env;
  http: Http;
  retry: RetryPolicy;
  sleep: (ms: number) => Promise<void>;
  /** Epoch ms; Date.now unless a test pins it. */
  now?: () => number;
}

// Without `permissions: id-token: write` the runner does not set these two variables
// (https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect#adding-permissions-settings).
const NO_ID_TOKEN =
  "tokensmith: the runner offers this job no OIDC token: add `permissions: id-token: write` to the job (or the workflow) that runs this step. " +
  "(ACTIONS_ID_TOKEN_REQUEST_URL / ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set; pull requests from forks never get them.)";

export async function run(deps: RunDeps): Promise<void> {
  const { core } = deps;
  const now = deps.now ?? Date.now;
  const started = now();
  try {
    const inputs = readInputs(core, deps.env);
    if (!deps.env.ACTIONS_ID_TOKEN_REQUEST_URL || !deps.env.ACTIONS_ID_TOKEN_REQUEST_TOKEN) throw new ActionFailure(NO_ID_TOKEN);

    const deadline = { at: started + inputs.timeoutSeconds * 1000, seconds: inputs.timeoutSeconds, now };
    const { body, shownUrl } = await requestToken({ ...deps, deadline }, inputs);

    // Masked before the answer is even checked: a refused answer's token is still a live token.
    const token = usableToken(body);
    if (token !== undefined) core.setSecret(token);
    const check = checkAnswer(body, {
      repositories: inputs.repositories,
      now: now(),
      ...(inputs.permissions ? { permissions: inputs.permissions } : {}),
      ...(inputs.otherRepositories ? { others: inputs.otherRepositories.map((name) => `${inputs.owner}/${name}`) } : {}),
    });
    if (!check.ok) {
      const revoked = check.token === undefined ? "" : await revokeRefused(deps, inputs.apiUrl, check.token);
      throw new ActionFailure(`tokensmith: refused the answer from ${shownUrl}: ${check.problem}.${revoked} Check broker-url: a tokensmith broker never answers this.`);
    }
    const answer = check.answer;

    core.setOutput("token", answer.token);
    core.setOutput("expires-at", answer.expires_at);
    core.setOutput("repository", answer.repository);
    // Every repository the token covers (owner/name, comma-separated): the job's own, then those of the repositories input.
    core.setOutput("repositories", answer.repositories.join(","));
    // Brokers before these two fields leave the outputs empty, as an unset output reads.
    if (answer.installation_id !== undefined) core.setOutput("installation-id", String(answer.installation_id));
    if (answer.app_slug !== undefined) core.setOutput("app-slug", answer.app_slug);
    if (answer.permissions !== undefined) core.setOutput("permissions", JSON.stringify(answer.permissions));
    // Post revokes the token; when it will not, the token is not written to the state file at all.
    if (!inputs.skipTokenRevoke) {
      core.saveState(STATE.token, answer.token);
      core.saveState(STATE.expiresAt, answer.expires_at);
    }
    core.info(`tokensmith: got a token for ${answer.repositories.join(", ")}, expires at ${answer.expires_at}`);
  } catch (error) {
    core.setFailed(error instanceof ActionFailure ? error.message : `tokensmith: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** How long revoking a refused answer's token may add to the step, past its bound (docs/action.md). */
export const REFUSED_REVOKE_TIMEOUT_MS = 10_000;

/** Revokes a refused answer's token now (post would never see it: it is not saved). One sentence for the failure line. */
async function revokeRefused(deps: RunDeps, apiUrl: string, token: string): Promise<string> {
  const failure = await revokeToken(deps.http, apiUrl, token, { timeoutMs: REFUSED_REVOKE_TIMEOUT_MS });
  return failure === undefined ? " The token it carried has been revoked." : ` Revoking the token it carried failed (${failure}); it expires within the hour.`;
}
