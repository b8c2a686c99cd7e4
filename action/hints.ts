// Every broker verdict as one line a release engineer can act on, read from the shared error table
// (shared/error-codes.ts). The raw `error` and `reason` stay in the line so people can search for
// them; the fix comes first.
import { ERROR_CODES, OIDC_REASONS, type ErrorCode } from "../shared/error-codes.js";

export interface Verdict {
  status: number;
  error: ErrorCode;
  /** As the broker sent it: may be a word this version of the action does not know. */
  reason?: string;
}

export interface HintContext {
  /** owner/name */
  repository: string;
  audience: string;
  brokerUrl: string;
}

export function describeVerdict(verdict: Verdict, context: HintContext): string {
  const codes = [`error: ${verdict.error}`, ...(verdict.reason ? [`reason: ${verdict.reason}`] : []), `HTTP ${verdict.status} from ${context.brokerUrl}`];
  return `tokensmith: ${sentence(verdict, context)} (${codes.join(", ")})`;
}

function sentence({ error, reason }: Verdict, { repository, audience }: HintContext): string {
  switch (error) {
    case "app_not_installed":
      return `The broker's GitHub App is not installed on ${repository}: install it on ${repository} (organisation or repository settings → GitHub Apps).`;
    case "repo_not_allowed":
      return `${repository} is not in the broker's ALLOWED_REPOSITORIES: the broker's operator must add it.`;
    case "repo_mismatch":
      return `The job's OIDC token is for another repository than ${repository}: a job can only get a token for its own repository.`;
    case "invalid_oidc_token":
      if (reason === "audience_mismatch") {
        return `The action's oidc-audience input ("${audience}") and the broker's OIDC_AUDIENCE disagree: set oidc-audience to an audience the broker accepts, or ask its operator to add "${audience}".`;
      }
      return `The broker refused the job's OIDC token: ${reasonHint(reason) ?? ERROR_CODES.invalid_oidc_token.hint}`;
    default:
      return ERROR_CODES[error].hint;
  }
}

function reasonHint(reason: string | undefined): string | undefined {
  if (reason === undefined || !Object.prototype.hasOwnProperty.call(OIDC_REASONS, reason)) return undefined;
  return OIDC_REASONS[reason as keyof typeof OIDC_REASONS].hint;
}
