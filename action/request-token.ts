// The exchange: a fresh OIDC token for every POST, the primary broker then (only when the primary
// is unreachable) the fallback, and backoff between rounds when no broker could be reached or the
// broker's verdict is one that retrying can change (503 oidc_key_fetch_failed: no verdict on the
// token was reached). Any other verdict, 4xx above all, ends the exchange at once.
import { ERROR_CODES } from "../shared/error-codes.js";
import type { TokenResponse } from "../shared/types.js";
import { ActionFailure } from "./action-failure.js";
import { postToken } from "./broker-client.js";
import { describeVerdict, type Verdict } from "./hints.js";
import type { Inputs } from "./inputs.js";
import type { Http, RetryPolicy, Toolkit } from "./toolkit.js";

export interface RequestTokenDeps {
  core: Pick<Toolkit, "getIDToken" | "info" | "debug">;
  http: Http;
  retry: RetryPolicy;
  sleep: (ms: number) => Promise<void>;
}

type Problem = { kind: "verdict"; verdict: Verdict; brokerUrl: string } | { kind: "unreachable"; details: string[] };

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
      const oidcToken = await deps.core.getIDToken(inputs.audience);
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
        if (!retryable(outcome.verdict)) throw new ActionFailure(describeVerdict(outcome.verdict, context));
        deps.core.info(`tokensmith: attempt ${attempt}: ${brokerUrl} answered ${outcome.verdict.status} ${outcome.verdict.error}${outcome.verdict.reason ? ` (${outcome.verdict.reason})` : ""}`);
        problem = { kind: "verdict", verdict: outcome.verdict, brokerUrl };
        break; // a broker answered: the fallback would not know better
      }
      deps.core.info(`tokensmith: attempt ${attempt}: ${brokerUrl} is unreachable (${outcome.detail})`);
      unreachable.push(`${brokerUrl} (${outcome.detail})`);
    }
    problem ??= { kind: "unreachable", details: unreachable };
    if (attempt < attempts) {
      const delay = deps.retry.baseDelayMs * 2 ** (attempt - 1);
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

/** Only a 5xx verdict the shared table marks retryable (503 oidc_key_fetch_failed above all). */
function retryable(verdict: Verdict): boolean {
  return verdict.status >= 500 && ERROR_CODES[verdict.error].retryable;
}
