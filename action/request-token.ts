// The exchange: a fresh OIDC token for every POST, the primary broker then (only when the primary
// is unreachable) the fallback, and backoff between rounds when no broker could be reached or the
// broker's verdict is one that retrying can change: a 5xx the broker marks with `Retry-After`
// (waited, up to RetryPolicy.maxRetryAfterMs, when longer than the backoff), and 503
// oidc_key_fetch_failed always (brokers before Retry-After did not mark it). Any other verdict,
// 4xx above all, ends the exchange at once.
import type { TokenResponse } from "../shared/types.js";
import { ActionFailure } from "./action-failure.js";
import { postToken, type BrokerOutcome } from "./broker-client.js";
import { describeVerdict, type Verdict } from "./hints.js";
import { describeIdTokenFailure, fetchIdToken } from "./id-token.js";
import type { Inputs } from "./inputs.js";
import type { Env, Http, RetryPolicy, Toolkit } from "./toolkit.js";

export interface RequestTokenDeps {
  core: Pick<Toolkit, "setSecret" | "info" | "debug">;
  env: Env;
  http: Http;
  retry: RetryPolicy;
  sleep: (ms: number) => Promise<void>;
}

type Problem = { kind: "verdict"; verdict: Verdict; brokerUrl: string; retryAfterMs?: number } | { kind: "unreachable"; details: string[] };

export async function requestToken(deps: RequestTokenDeps, inputs: Inputs): Promise<TokenResponse> {
  const addresses = inputs.fallbackUrl ? [inputs.brokerUrl, inputs.fallbackUrl] : [inputs.brokerUrl];
  const repository = `${inputs.owner}/${inputs.repo}`;
  const attempts = Math.max(1, deps.retry.attempts);
  let problem: Problem | undefined;

  for (let attempt = 1; attempt <= attempts; attempt++) {
    problem = undefined;
    const unreachable: string[] = [];
    for (const brokerUrl of addresses) {
      // Runner OIDC tokens live five minutes: never reuse one across attempts.
      const oidcToken = await jobOidcToken(deps, inputs.audience);
      const outcome = await postToken(deps.http, brokerUrl, {
        oidcToken,
        owner: inputs.owner,
        repo: inputs.repo,
        ...(inputs.ref ? { ref: inputs.ref } : {}),
        ...(inputs.runId ? { runId: inputs.runId } : {}),
        ...(inputs.sha ? { sha: inputs.sha } : {}),
      });
      if (outcome.kind === "token") return outcome.token;
      if (outcome.kind === "unexpected") {
        throw new ActionFailure(`tokensmith: ${brokerUrl} answered ${outcome.detail}: check that broker-url is the tokensmith broker's origin.`);
      }
      if (outcome.kind === "verdict") {
        const context = { repository, audience: inputs.audience, brokerUrl };
        if (!worthRetrying(outcome)) throw new ActionFailure(describeVerdict(outcome.verdict, context));
        deps.core.info(`tokensmith: attempt ${attempt}: ${brokerUrl} answered ${outcome.verdict.status} ${outcome.verdict.error}${outcome.verdict.reason ? ` (${outcome.verdict.reason})` : ""}`);
        problem = { kind: "verdict", verdict: outcome.verdict, brokerUrl, ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}) };
        break; // a broker answered: the fallback would not know better
      }
      deps.core.info(`tokensmith: attempt ${attempt}: ${brokerUrl} is unreachable (${outcome.detail})`);
      unreachable.push(`${brokerUrl} (${outcome.detail})`);
    }
    problem ??= { kind: "unreachable", details: unreachable };
    if (attempt < attempts) {
      const delay = retryDelay(deps.retry, attempt, problem.kind === "verdict" ? problem.retryAfterMs : undefined);
      deps.core.info(`tokensmith: retrying in ${delay} ms (attempt ${attempt + 1} of ${attempts})`);
      await deps.sleep(delay);
    }
  }

  const after = attempts > 1 ? ` after ${attempts} attempts` : "";
  if (problem?.kind === "verdict") {
    const line = describeVerdict(problem.verdict, { repository, audience: inputs.audience, brokerUrl: problem.brokerUrl });
    throw new ActionFailure(`${line}${after}`);
  }
  const tried = problem?.details.join(", nor ") ?? inputs.brokerUrl;
  throw new ActionFailure(`tokensmith: could not reach the broker at ${tried}${after}: check broker-url${inputs.fallbackUrl ? " and broker-fallback-url" : ""}, or retry later.`);
}

/**
 * A 5xx verdict the broker marked with Retry-After, or oidc_key_fetch_failed (no verdict on the
 * token was reached; older brokers send no Retry-After). Never a 4xx. The shared table's
 * `retryable` flag documents the same split; the header is what the action goes by.
 */
function worthRetrying(outcome: Extract<BrokerOutcome, { kind: "verdict" }>): boolean {
  if (outcome.verdict.status < 500) return false;
  return outcome.retryAfterMs !== undefined || outcome.verdict.error === "oidc_key_fetch_failed";
}

/** The backoff before round `attempt + 1`, or what the server asked for (capped) when longer. */
function retryDelay(retry: RetryPolicy, attempt: number, retryAfterMs: number | undefined): number {
  const backoff = retry.baseDelayMs * 2 ** (attempt - 1);
  return retryAfterMs === undefined ? backoff : Math.max(backoff, Math.min(retryAfterMs, retry.maxRetryAfterMs));
}

/**
 * A fresh OIDC token from the runner, masked before anything else sees it. Network errors, 5xx and
 * 429 are retried with the same backoff; a refusal (401/403) or any other answer fails at once.
 */
async function jobOidcToken(deps: RequestTokenDeps, audience: string): Promise<string> {
  const requestUrl = deps.env.ACTIONS_ID_TOKEN_REQUEST_URL ?? "";
  const where = originOf(requestUrl);
  const attempts = Math.max(1, deps.retry.attempts);
  for (let attempt = 1; ; attempt++) {
    const outcome = await fetchIdToken(deps.http, requestUrl, deps.env.ACTIONS_ID_TOKEN_REQUEST_TOKEN ?? "", audience);
    if (outcome.kind === "token") {
      deps.core.setSecret(outcome.value);
      return outcome.value;
    }
    if (outcome.kind !== "transient") throw new ActionFailure(describeIdTokenFailure(outcome, where, ""));
    if (attempt >= attempts) throw new ActionFailure(describeIdTokenFailure(outcome, where, attempts > 1 ? ` after ${attempts} attempts` : ""));
    const delay = retryDelay(deps.retry, attempt, outcome.retryAfterMs);
    deps.core.info(`tokensmith: the runner's OIDC token service failed (${outcome.detail}); retrying in ${delay} ms (attempt ${attempt + 1} of ${attempts})`);
    await deps.sleep(delay);
  }
}

/** ACTIONS_ID_TOKEN_REQUEST_URL's origin: its query is the runner's business, not the log's. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    throw new ActionFailure(`tokensmith: ACTIONS_ID_TOKEN_REQUEST_URL is not a URL; run this step in a GitHub Actions job.`);
  }
}
