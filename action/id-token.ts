// The job's OIDC token from the runner (ACTIONS_ID_TOKEN_REQUEST_URL&audience=…, bearer
// ACTIONS_ID_TOKEN_REQUEST_TOKEN): the protocol @actions/core's getIDToken speaks, spoken here so
// that the request is bounded like every other (http.ts) and its failures have a class the action
// can act on: a refusal (401/403) is final, a network error, 5xx or 429 is worth another try.
// https://docs.github.com/en/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect
import type { Http } from "./toolkit.js";
import { retryAfterMs } from "./broker-client.js";
import { networkDetail } from "./http.js";

type IdTokenOutcome =
  | { kind: "token"; value: string }
  /** 401/403: the job has no id-token: write, or the request token is stale. */
  | { kind: "refused"; status: number }
  /** Network error, timeout, 5xx or 429: another try may succeed. */
  | { kind: "transient"; detail: string; retryAfterMs?: number }
  /** Any other answer: not the runner's token service. */
  | { kind: "unexpected"; detail: string };

export async function fetchIdToken(http: Http, requestUrl: string, requestToken: string, audience: string, limits?: { timeoutMs?: number }): Promise<IdTokenOutcome> {
  let answer;
  try {
    answer = await http.request(
      "GET",
      `${requestUrl}&audience=${encodeURIComponent(audience)}`,
      null,
      { authorization: `Bearer ${requestToken}`, accept: "application/json" },
      limits,
    );
  } catch (error) {
    return { kind: "transient", detail: networkDetail(error) };
  }
  const { status } = answer;
  if (status === 200) {
    const value = parseValue(answer.body);
    return value ? { kind: "token", value } : { kind: "unexpected", detail: "HTTP 200 without a token in the body" };
  }
  if (status === 401 || status === 403) return { kind: "refused", status };
  if (status >= 500 || status === 429) {
    const wait = retryAfterMs(answer.headers["retry-after"]);
    return { kind: "transient", detail: `HTTP ${status}`, ...(wait !== undefined ? { retryAfterMs: wait } : {}) };
  }
  return { kind: "unexpected", detail: `HTTP ${status}` };
}

function parseValue(body: string): string | undefined {
  try {
    const value = (JSON.parse(body) as { value?: unknown } | null)?.value;
    return typeof value === "string" && value !== "" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** One line per failure class, with the fix first; `where` is the service's origin, never its query. */
export function describeIdTokenFailure(outcome: Exclude<IdTokenOutcome, { kind: "token" }>, where: string, after: string): string {
  switch (outcome.kind) {
    case "refused":
      return `tokensmith: the runner refused to issue an OIDC token (HTTP ${outcome.status} from ${where}): the job lacks \`permissions: id-token: write\`, or its request token is stale (re-run the job).`;
    case "transient":
      return `tokensmith: the runner's OIDC token service at ${where} is unreachable or failing (${outcome.detail})${after}: re-run the job later; on a self-hosted runner, check its network and proxy settings.`;
    case "unexpected":
      return `tokensmith: the runner's OIDC token service at ${where} answered ${outcome.detail}${after}: re-run the job; if it persists, the runner is misconfigured.`;
  }
}
