// Every broker verdict as one line for the person who owns the workflow, not for an API caller:
// what happened and what they (or the broker's operator) can do. The table below has a line for
// every code of the shared table (shared/error-codes.ts; the Record type makes a missing code a
// compile error). Codes the action never causes when it and the broker agree (malformed request
// bodies, other routes' codes) say so: at broker-url answers something else, or another version.
// The raw `error` and `reason` stay in the line so people can search for them; the fix comes first.
import { OIDC_REASONS, type ErrorCode, type OidcReason } from "../shared/error-codes.js";
import { shown } from "./untrusted-text.js";

export interface Verdict {
  status: number;
  error: ErrorCode;
  /** As the broker sent it: may be a word this version of the action does not know (shown escaped). */
  reason?: string;
  /** The body's one human line (docs/errors.md), as the broker sent it: shown quoted and escaped. */
  detail?: string;
}

interface HintContext {
  /** owner/name */
  repository: string;
  audience: string;
  /** As printed: redacted (shared/redact-url.ts). */
  brokerUrl: string;
}

export const MISMATCH =
  "This looks like a version or URL mismatch: a tokensmith action talking to a tokensmith broker never gets this answer. Check that broker-url is the broker's origin (no path, nothing in between rewriting requests) and that this action's version matches the broker's.";

// The action retries a verdict only when the shared table and the broker's Retry-After say so
// (request-token.ts), so a hint never claims it did: the failure line ends "after N attempts" when
// it did.
const RERUN = "Re-run the job later";

/** The hint for each code, for a workflow author; `{repository}` and `{audience}` are filled in. */
export const WORKFLOW_HINTS: Readonly<Record<ErrorCode, string>> = {
  not_found: MISMATCH,
  method_not_allowed: MISMATCH,
  payload_too_large: `${MISMATCH} (A proxy with a small body limit in front of the broker gives this too.)`,
  request_timeout: `The broker did not receive the action's request in time: the network between the runner and the broker is slow or dropping connections. ${RERUN}; on a self-hosted runner, check its network and proxy.`,
  invalid_json: MISMATCH,
  invalid_request: MISMATCH,
  missing_required_fields: MISMATCH,
  invalid_token_permissions: "The broker is misconfigured (its TOKEN_PERMISSIONS setting is unusable): nothing in this workflow can fix it; tell the broker's operator.",
  invalid_permissions:
    "The broker refused the step's permission-<name> inputs as malformed, though this action checked them against its own catalogue of the platform's permissions: the action's and the broker's versions differ; use a permission both know, or ask the broker's operator to update it.",
  invalid_repositories:
    "The broker refused the step's repositories input, though this action checked it: the action's and the broker's versions differ; name at most 20 repositories of the job's own owner, each once.",
  invalid_oidc_token: "The broker refused the job's OIDC token.",
  oidc_token_replayed:
    "The broker had already minted a token for this OIDC token: this action asks the runner for a fresh OIDC token for each request, so something else sent the same token first (another step, a proxy replaying requests). Re-run the job; if it persists, tell the broker's operator.",
  repo_mismatch: "The job's OIDC token is for another repository than {repository}: a job can only get a token for its own repository.",
  repo_not_allowed: "{repository} is not in the broker's ALLOWED_REPOSITORIES: the broker's operator must add it.",
  permissions_not_granted:
    "The step's permission-<name> inputs ask for more than the broker grants {repository}: ask for less, or have the grant widened where the detail says (TOKEN_PERMISSIONS: the broker's operator; installation: an owner of the account must grant the App that permission; rule <name> or owner rule <name>: the trust policy's rule, in .github/tokensmith.yml or the owner's .github/tokensmith-org.yml).",
  app_not_installed: "The broker's GitHub App is not installed on {repository}: install it on {repository} (organisation or repository settings → GitHub Apps).",
  policy_denied: "No rule of the trust policy that applies to {repository} holds for this job (.github/tokensmith.yml on the default branch, or the owner's .github/tokensmith-org.yml): change the job or the policy; the broker's detail names the rule, the condition and the claim's value. When the detail names another repository of the repositories input, that repository's own .github/tokensmith.yml must consent: a rule with a repository condition matching {repository} that holds for this job (docs/policies.md, \"Other repositories\").",
  policy_invalid: "The trust policy of {repository} (or of its owner) does not parse or validate, so the broker refuses every token for it: fix the file on the default branch (`tokensmith policy check FILE` shows the line).",
  policy_unavailable: `The broker could not read the trust policy from GitHub. ${RERUN}, and tell the broker's operator if it persists.`,
  github_installation_lookup_failed: `GitHub gave the broker an unusable answer about the App's installation. ${RERUN}, and tell the broker's operator if it persists.`,
  installation_lookups_limited: `The broker is holding back installation lookups for this repository's owner: many jobs of repositories the App is not installed on asked for tokens within the last minute (or, with \`repositories\`, this repository's jobs named many repositories the App cannot see). ${RERUN}; if the App should be installed on {repository}, install it, and check the names in \`repositories\`.`,
  installation_tokens_limited: `The broker is holding {repository} (or its owner) to its share of the GitHub App's budget: other repositories are waiting, and {repository} already has many token requests waiting. ${RERUN}; spread the jobs that ask for tokens (e.g. a matrix's max-parallel).`,
  installation_token_failed: `GitHub refused or failed to mint the token. ${RERUN}; if it persists, tell the broker's operator (the App may lack a permission the broker asks for).`,
  sign_failed: MISMATCH,
  oidc_key_fetch_failed: `The broker could not fetch the OIDC issuer's keys. ${RERUN}.`,
  server_busy: `The broker is overloaded. ${RERUN}.`,
  sender_limited: `The broker is holding this runner's address to its share of requests: many requests came from it within the last seconds (a shared NAT, or a proxy the broker's operator has not declared with TRUST_PROXY_HOPS). ${RERUN}, and tell the broker's operator if it persists.`,
  deadline_exceeded: `The broker could not answer in time (GitHub was slow). ${RERUN}, and tell the broker's operator if it persists.`,
  app_key_unavailable: `The broker could not reach the key store that holds its GitHub App key. ${RERUN}, and tell the broker's operator if it persists.`,
  app_unconfigured: "The broker is misconfigured (its GitHub App credentials, HOST_APP_ID and HOST_APP_PRIVATE_KEY, are missing or unusable): nothing in this workflow can fix it; tell the broker's operator.",
  unauthorized: MISMATCH,
  no_file_changes: MISMATCH,
  invalid_repo: MISMATCH,
  sign_disabled: MISMATCH,
  releases_disabled: MISMATCH,
  platform_rate_limited: MISMATCH,
  invalid_signature: MISMATCH,
  webhook_disabled: MISMATCH,
  webhook_queue_unavailable: MISMATCH,
  internal_error: `The broker failed unexpectedly. ${RERUN}, and tell the broker's operator if it persists (its log has the detail).`,
};

const TELL = "tell the broker's operator";

/** invalid_oidc_token's (and oidc_key_fetch_failed's) reason words, for a workflow author; audience_mismatch is worded with the input's value. */
export const REASON_HINTS: Readonly<Record<OidcReason, string>> = {
  malformed_token: `The broker could not read the OIDC token the runner issued. ${MISMATCH}`,
  alg_unsupported: `The token was not RS256-signed, and the runner's always are. ${MISMATCH}`,
  issuer_mismatch: `The job's OIDC token comes from an issuer the broker does not trust (e.g. a GitHub Enterprise runner, or an enterprise-specific issuer URL): ${TELL} to trust it.`,
  kid_not_found: `The token was signed with a key the issuer does not publish (yet). Re-run the job; if it persists, ${TELL}.`,
  key_ambiguous: `The token has no key id, and the runner's always have one. ${MISMATCH}`,
  signature_invalid: `The token's signature does not verify: something between the runner and the broker altered it, or the broker trusts another issuer at that address; ${TELL}.`,
  token_expired: `The token had expired when the broker checked it: the runner's or the broker's clock is off, or the request took minutes. Re-run the job; if it persists, ${TELL}.`,
  token_not_yet_valid: `The runner's and the broker's clocks disagree by more than a minute: ${TELL} (and on a self-hosted runner, check its clock).`,
  token_lifetime_exceeded: `The broker saw an OIDC token older or longer-lived than an hour, and the runner's live five minutes: check the runner's clock, then ${TELL}.`,
  audience_mismatch: "The action's oidc-audience input and the broker's OIDC_AUDIENCE disagree.",
  claim_invalid: `The job's OIDC token lacks a claim the broker needs (repository, repository_id, repository_owner_id): ${TELL}.`,
  unknown: `The broker refused the token without saying why; ${TELL} (its log has the detail).`,
  jwks_unavailable: `The broker could not fetch the OIDC issuer's keys. ${RERUN}.`,
};

/** How much of a broker's `detail` the failure line shows (the whole of any real one: a few permissions' reasons). */
export const MAX_SHOWN_DETAIL = 600;

export function describeVerdict(verdict: Verdict, context: HintContext): string {
  const codes = [`error: ${verdict.error}`, ...(verdict.reason !== undefined ? [`reason: ${reasonText(verdict.reason)}`] : []), `HTTP ${verdict.status} from ${context.brokerUrl}`];
  const detail = verdict.detail !== undefined ? ` The broker says: ${shown(verdict.detail, MAX_SHOWN_DETAIL)}.` : "";
  return `tokensmith: ${sentence(verdict, context)}${detail} (${codes.join(", ")})`;
}

function sentence({ error, reason }: Verdict, { repository, audience }: HintContext): string {
  if (error === "invalid_oidc_token") {
    if (reason === "audience_mismatch") {
      return `The action's oidc-audience input ("${audience}") and the broker's OIDC_AUDIENCE disagree: set oidc-audience to an audience the broker accepts, or ask its operator to add "${audience}".`;
    }
    const known = knownReason(reason);
    return known ? REASON_HINTS[known] : `${WORKFLOW_HINTS.invalid_oidc_token} Its reason is a word this version of the action does not know: ${TELL}.`;
  }
  return WORKFLOW_HINTS[error].replaceAll("{repository}", repository).replaceAll("{audience}", audience);
}

/** A reason word of the table as it is; anything else quoted and escaped (it is the broker's text). */
export function reasonText(reason: string): string {
  return knownReason(reason) ? reason : shown(reason, 40);
}

function knownReason(reason: string | undefined): OidcReason | undefined {
  return reason !== undefined && Object.hasOwn(OIDC_REASONS, reason) ? (reason as OidcReason) : undefined;
}
