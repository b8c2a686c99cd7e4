// The exchange: a fresh OIDC token for every POST, the primary broker then (only when the primary
// gave no answer: network error, timeout before a status line, a 5xx that is not a verdict) the
// fallback, and backoff between rounds when no broker could be reached or the broker's verdict is
// one the shared table calls retryable. A 200, whatever its body, ends the exchange: a token may
// have been minted, and asking again (either broker) would mint another that nobody revokes.
// Every request and every wait ends within the step's bound (Deadline, input timeout-seconds).
// A redirect or a proxy's refusal ends it at once: asking again would meet the same answer. Every
// address is printed redacted (shared/redact-url.ts): broker-url may carry a password.
import { ERROR_CODES } from "../shared/error-codes.js";
import { redactUrl } from "../shared/redact-url.js";
import { ActionFailure } from "./action-failure.js";
import { postToken, type BrokerOutcome } from "./broker-client.js";
import { describeVerdict, reasonText, type Verdict } from "./hints.js";
import { describeIdTokenFailure, fetchIdToken } from "./id-token.js";
import type { Inputs } from "./inputs.js";
import type { Deadline, Env, Http, RetryPolicy, Toolkit } from "./toolkit.js";

interface RequestTokenDeps {
  core: Pick<Toolkit, "setSecret" | "info" | "debug">;
  env: Env;
  http: Http;
  retry: RetryPolicy;
  sleep: (ms: number) => Promise<void>;
  deadline: Deadline;
}

/** The broker's 200: its parsed body (undefined when not JSON), not yet checked (check-answer.ts). */
interface BrokerAnswer {
  body: unknown;
  /** The address that answered, as printed (redacted). */
  shownUrl: string;
}

type Problem = { kind: "verdict"; verdict: Verdict; brokerUrl: string; retryAfterMs?: number } | { kind: "unreachable"; details: string[] };

export async function requestToken(deps: RequestTokenDeps, inputs: Inputs): Promise<BrokerAnswer> {
  const addresses = inputs.fallbackUrl ? [inputs.brokerUrl, inputs.fallbackUrl] : [inputs.brokerUrl];
  const repository = `${inputs.owner}/${inputs.repo}`;
  const attempts = Math.max(1, deps.retry.attempts);
  const left = () => deps.deadline.at - deps.deadline.now();
  let problem: Problem | undefined;
  let attempt = 1;

  for (; attempt <= attempts; attempt++) {
    problem = undefined;
    const unreachable: string[] = [];
    for (const brokerUrl of addresses) {
      const shownUrl = redactUrl(brokerUrl);
      if (left() <= 0) break;
      // Runner OIDC tokens live five minutes: never reuse one across attempts.
      const oidcToken = await jobOidcToken(deps, inputs.audience);
      if (left() <= 0) break;
      const outcome = await postToken(
        deps.http,
        brokerUrl,
        {
          oidcToken,
          owner: inputs.owner,
          repo: inputs.repo,
          ...(inputs.rule ? { rule: inputs.rule } : {}),
          ...(inputs.ref ? { ref: inputs.ref } : {}),
          ...(inputs.runId ? { runId: inputs.runId } : {}),
          ...(inputs.sha ? { sha: inputs.sha } : {}),
          // Only when a permission input is set: a body without it asks for the whole grant.
          ...(inputs.permissions ? { permissions: inputs.permissions } : {}),
          // Only when the repositories input names others: each must consent in its own policy.
          ...(inputs.otherRepositories ? { repositories: inputs.otherRepositories } : {}),
        },
        { timeoutMs: left() },
      );
      if (outcome.kind === "answered") return { body: outcome.body, shownUrl };
      if (outcome.kind === "answer-incomplete") {
        throw new ActionFailure(
          `tokensmith: ${shownUrl} began a 200 answer that never arrived whole (${outcome.detail}): a token may have been minted that the action cannot read or revoke (it expires within the hour), so it does not ask again. Check broker-url and whatever sits between the runner and the broker.`,
        );
      }
      if (outcome.kind === "unexpected") {
        throw new ActionFailure(`tokensmith: ${shownUrl} answered ${outcome.detail}: check that broker-url is the tokensmith broker's origin.`);
      }
      if (outcome.kind === "redirect") throw new ActionFailure(describeRedirect(shownUrl, outcome));
      if (outcome.kind === "proxy") {
        const { proxy, variable, detail } = outcome.failure;
        throw new ActionFailure(
          `tokensmith: the proxy ${proxy} (from ${variable}) ${detail} on the way to ${shownUrl}, so the broker was never asked: fix the proxy setting ${variable} (its address or credentials), or list the broker's host in NO_PROXY.`,
        );
      }
      if (outcome.kind === "verdict") {
        const context = { repository, audience: inputs.audience, brokerUrl: shownUrl };
        if (!worthRetrying(outcome)) throw new ActionFailure(describeVerdict(outcome.verdict, context));
        deps.core.info(`tokensmith: attempt ${attempt}: ${shownUrl} answered ${outcome.verdict.status} ${outcome.verdict.error}${outcome.verdict.reason !== undefined ? ` (${reasonText(outcome.verdict.reason)})` : ""}`);
        problem = { kind: "verdict", verdict: outcome.verdict, brokerUrl: shownUrl, ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}) };
        break; // a broker answered: the fallback would not know better
      }
      deps.core.info(`tokensmith: attempt ${attempt}: ${shownUrl} is unreachable (${outcome.detail})`);
      unreachable.push(`${shownUrl} (${outcome.detail})`);
    }
    problem ??= { kind: "unreachable", details: unreachable };
    if (left() <= 0 || attempt >= attempts) break;
    const delay = retryDelay(deps.retry, attempt, problem.kind === "verdict" ? problem.retryAfterMs : undefined);
    // A wait that would end past the bound is no wait at all: fail now, with what is known.
    if (delay >= left()) break;
    deps.core.info(`tokensmith: retrying in ${delay} ms (attempt ${attempt + 1} of ${attempts})`);
    await deps.sleep(delay);
  }

  const tries = Math.min(attempt, attempts);
  const bound = tries < attempts || left() <= 0 ? ` (the step's ${deps.deadline.seconds} s bound, timeout-seconds, leaves no time for more)` : "";
  const after = `${tries > 1 ? ` after ${tries} attempts` : ""}${bound}`;
  if (problem?.kind === "verdict") {
    const line = describeVerdict(problem.verdict, { repository, audience: inputs.audience, brokerUrl: problem.brokerUrl });
    throw new ActionFailure(`${line}${after}`);
  }
  const tried = problem?.details.length ? problem.details.join(", nor ") : redactUrl(inputs.brokerUrl);
  throw new ActionFailure(`tokensmith: could not reach the broker at ${tried}${after}: check broker-url${inputs.fallbackUrl ? " and broker-fallback-url" : ""}, or retry later.`);
}

/**
 * A broker never redirects /token: broker-url is an old or an intermediate address. The line names
 * where the redirect points (redacted, its /token dropped: the value broker-url should have), when
 * the answer said.
 */
function describeRedirect(shownUrl: string, outcome: Extract<BrokerOutcome, { kind: "redirect" }>): string {
  const target = outcome.location ? redactUrl(outcome.location.href).replace(/\/token$/, "") : undefined;
  const where = target ? ` to ${target}` : "";
  return `tokensmith: ${shownUrl} answered HTTP ${outcome.status}${where}: the broker URL redirects, and the action does not follow redirects: use the final URL as broker-url${target ? ` (${target})` : ""}.`;
}

/**
 * The shared table decides (ERROR_CODES[code].retryable), 408 request_timeout included. For a 5xx
 * the broker also marks the transient cases with Retry-After (a mint the platform refused for good
 * has none), so a 5xx is retried only with it, or when it is oidc_key_fetch_failed (no verdict was
 * reached; brokers before Retry-After did not mark it).
 */
function worthRetrying(outcome: Extract<BrokerOutcome, { kind: "verdict" }>): boolean {
  const { status, error } = outcome.verdict;
  if (!ERROR_CODES[error].retryable) return false;
  if (status < 500) return true;
  return outcome.retryAfterMs !== undefined || error === "oidc_key_fetch_failed";
}

/** The backoff before round `attempt + 1`, or what the server asked for (capped) when longer. */
function retryDelay(retry: RetryPolicy, attempt: number, retryAfterMs: number | undefined): number {
  const backoff = retry.baseDelayMs * 2 ** (attempt - 1);
  return retryAfterMs === undefined ? backoff : Math.max(backoff, Math.min(retryAfterMs, retry.maxRetryAfterMs));
}

/**
 * A fresh OIDC token from the runner, masked before anything else sees it. Network errors, 5xx and
 * 429 are retried with the same backoff, within the step's bound; a refusal (401/403) or any other
 * answer fails at once.
 */
async function jobOidcToken(deps: RequestTokenDeps, audience: string): Promise<string> {
  const requestUrl = deps.env.ACTIONS_ID_TOKEN_REQUEST_URL ?? "";
  const where = originOf(requestUrl);
  const attempts = Math.max(1, deps.retry.attempts);
  const left = () => deps.deadline.at - deps.deadline.now();
  for (let attempt = 1; ; attempt++) {
    const outcome = await fetchIdToken(deps.http, requestUrl, deps.env.ACTIONS_ID_TOKEN_REQUEST_TOKEN ?? "", audience, { timeoutMs: left() });
    if (outcome.kind === "token") {
      deps.core.setSecret(outcome.value);
      return outcome.value;
    }
    if (outcome.kind !== "transient") throw new ActionFailure(describeIdTokenFailure(outcome, where, ""));
    const delay = retryDelay(deps.retry, attempt, outcome.retryAfterMs);
    if (attempt >= attempts || delay >= left()) throw new ActionFailure(describeIdTokenFailure(outcome, where, attempt > 1 ? ` after ${attempt} attempts` : ""));
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
