// The broker's error codes, once, as data. The server's responses, the README's table, the
// action's hints and the tests all read this table (docs/errors.md; docs/design.md#decisions-where-the-contract-was-open).

export type Route = "/token" | "/sign" | "/releases" | "/webhook" | "*";

export interface ErrorCodeInfo {
  /** HTTP status the broker answers with. */
  status: number;
  /** Routes that can answer with this code. */
  routes: readonly Route[];
  /** What it means, for operators and the README. */
  meaning: string;
  /** Whether the same request can succeed later without anyone changing anything. */
  retryable: boolean;
  /**
   * The one-line fix, for whoever calls the route. The action, the CLI and the dashboard word it
   * for their own readers where that differs (action/hints.ts: the workflow's owner).
   */
  hint: string;
}

export const ERROR_CODES = {
  not_found: {
    status: 404, routes: ["*"], retryable: false,
    meaning: "The path is not one of the broker's four routes.",
    hint: "Check `broker-url`: it must be the broker's origin, without a path.",
  },
  method_not_allowed: {
    status: 405, routes: ["*"], retryable: false,
    meaning: "The route exists but not for this method (the `Allow` header names the right one).",
    hint: "Check `broker-url`: the broker answered, but not as a tokensmith broker would for this call.",
  },
  payload_too_large: {
    status: 413, routes: ["/token", "/sign", "/webhook"], retryable: false,
    meaning: "The body is over the route's limit (/token 64 KiB, /sign 20 MiB, /webhook 25 MiB).",
    hint: "Send a smaller request body.",
  },
  request_timeout: {
    status: 408, routes: ["*"], retryable: true,
    meaning: "The request did not arrive in time: headers within 10 s, a `/token` or `/webhook` body within 10 s of the request's start (connection closed).",
    hint: "The broker stopped waiting for the request; check the network between the runner and the broker, then retry.",
  },
  invalid_json: {
    status: 400, routes: ["/token", "/sign", "/webhook"], retryable: false,
    meaning: "The body is not parseable JSON.",
    hint: "The request body must be JSON.",
  },
  invalid_request: {
    status: 400, routes: ["/token", "/sign", "/webhook"], retryable: false,
    meaning: "The body parsed but is not a JSON object, or a field has the wrong type or form.",
    hint: "The request body must be a JSON object with the documented fields.",
  },
  missing_required_fields: {
    status: 400, routes: ["/token", "/sign"], retryable: false,
    meaning: "A required field is absent or empty (/token: oidcToken, owner, repo; /sign: repo, branch, expected_head_oid, message.headline).",
    hint: "Send every required field.",
  },
  invalid_token_permissions: {
    status: 400, routes: ["/token"], retryable: false,
    meaning: "The broker's TOKEN_PERMISSIONS setting is set but parses to nothing usable (broker misconfiguration).",
    hint: "The broker's operator must fix TOKEN_PERMISSIONS (values are exactly read or write).",
  },
  invalid_permissions: {
    status: 400, routes: ["/token"], retryable: false,
    meaning: "The request's optional `permissions` is not a non-empty object of the platform's App permission names to `read` or `write`; `detail` names the entry.",
    hint: "Send `permissions` as an object such as {\"contents\": \"read\"}: catalogue names, values exactly read or write.",
  },
  invalid_repositories: {
    status: 400, routes: ["/token"], retryable: false,
    meaning: "The request's optional `repositories` is not an array of 1 to 20 distinct repository names of the caller's owner (`name` or `owner/name`); `detail` names the entry.",
    hint: "Send `repositories` as an array of repository names of your own owner, such as [\"docs\", \"website\"]: at most 20, each once.",
  },
  invalid_oidc_token: {
    status: 401, routes: ["/token"], retryable: false,
    meaning: "The OIDC token failed verification; `reason` says which check.",
    hint: "The job's OIDC token was refused; see the reason.",
  },
  oidc_token_replayed: {
    status: 409, routes: ["/token"], retryable: false,
    meaning: "This OIDC token was already used for a token (an OIDC token mints once, until it expires; on any broker instance sharing the store).",
    hint: "Ask the runner for a fresh OIDC token for each request (the action does); a token sent twice is refused the second time.",
  },
  repo_mismatch: {
    status: 403, routes: ["/token"], retryable: false,
    meaning: "The token's repository claim is not owner/repo.",
    hint: "A job can only get a token for its own repository.",
  },
  repo_not_allowed: {
    status: 403, routes: ["/token", "/sign"], retryable: false,
    meaning: "The repository is outside ALLOWED_REPOSITORIES (/token) or SIGN_ALLOWED_REPOSITORIES (/sign).",
    hint: "The broker's operator must add this repository to ALLOWED_REPOSITORIES (SIGN_ALLOWED_REPOSITORIES for /sign).",
  },
  permissions_not_granted: {
    status: 403, routes: ["/token"], retryable: false,
    meaning: "The request's `permissions` ask for more than the grant (TOKEN_PERMISSIONS ∩ the trust-policy rule that holds, and the owner rule, ∩ the installation's permissions); `detail` names each permission and what withheld it (`rule <name>`, `owner rule <name>` for a policy rule).",
    hint: "Ask for no more than the grant, or have it widened where `detail` says (TOKEN_PERMISSIONS: the broker's operator; rule <name>: the repository's .github/tokensmith.yml; owner rule <name>: the owner's .github/tokensmith-org.yml; installation: the App's permissions on the account).",
  },
  app_not_installed: {
    status: 404, routes: ["/token"], retryable: false,
    meaning: "The App is not installed on the repository.",
    hint: "Install the App on this repository (organisation or repository settings → GitHub Apps).",
  },
  policy_denied: {
    status: 403, routes: ["/token"], retryable: false,
    meaning: "A trust policy applies and none of its rules holds for this job (or the request's `rule` does not), or TOKEN_POLICY=required and no policy applies; `detail` names, per rule, the first failed condition and the claim's value. With `repositories`: a repository named there does not consent (no rule of its policy with a `repository` condition holds for this job, it has no policy, or the App cannot see it); `detail` names that repository only, never its rules.",
    hint: "Change the job (event, ref, workflow, environment) or the policy file (.github/tokensmith.yml on the default branch) so that a rule holds; see detail.",
  },
  policy_invalid: {
    status: 403, routes: ["/token"], retryable: false,
    meaning: "The repository's or the owner's policy file does not parse or validate (YAML, schema, over 64 KiB or another of its limits, a tag or merge key, a refused pattern); `detail` says which file and line. Fail closed.",
    hint: "Fix the policy file on the default branch (`tokensmith policy check FILE` validates it offline); see detail for the line.",
  },
  policy_unavailable: {
    status: 503, routes: ["/token"], retryable: true,
    meaning: "The platform did not answer the read of a policy file (or of the broker's reader token); never taken as \"no policy\". `Retry-After` says when to retry.",
    hint: "The broker could not read the trust policy from the platform; retry after the Retry-After delay.",
  },
  github_installation_lookup_failed: {
    status: 500, routes: ["/token"], retryable: true,
    meaning: "The platform answered the installation lookup with something unusable.",
    hint: "The platform gave the broker an unusable answer; retry later, and tell the broker's operator if it persists.",
  },
  installation_lookups_limited: {
    status: 503, routes: ["/token"], retryable: true,
    meaning: "The repository's owner (the OIDC token's `repository_owner_id`) has used its share of the App's platform budget on installation lookups that found no installation (a tenth of `UPSTREAM_POINTS_PER_MINUTE` a minute), or the calling repository its own share on lookups of `repositories` the App cannot see (a fiftieth); `Retry-After` says when to try again.",
    hint: "The broker is holding back installation lookups for this repository's owner (or lookups of `repositories` for this repository); retry after the Retry-After delay.",
  },
  installation_tokens_limited: {
    status: 429, routes: ["/token"], retryable: true,
    meaning: "The repository (or its owner: the OIDC token's `repository_owner_id`) has used its share of the App's platform budget while others wait (an owner half of `UPSTREAM_POINTS_PER_MINUTE`, a repository half of its owner's part) and already has requests waiting for more (8 per repository, 16 per owner); refused before any platform call. `Retry-After` says when to try again.",
    hint: "The broker is holding this repository (or its owner) to its share of the App's platform budget; retry after the Retry-After delay, and spread the jobs that ask for tokens.",
  },
  installation_token_failed: {
    status: 502, routes: ["/token", "/sign", "/webhook"], retryable: true,
    meaning: "A token could not be minted for that repository (the platform refused or failed the mint).",
    hint: "The platform refused to mint a token; retry later, and tell the broker's operator if it persists.",
  },
  sign_failed: {
    status: 502, routes: ["/sign"], retryable: false,
    meaning: "The platform rejected the commit, commonly because expected_head_oid is stale.",
    hint: "Fetch the branch's current head and retry with it as expected_head_oid.",
  },
  oidc_key_fetch_failed: {
    status: 503, routes: ["/token"], retryable: true,
    meaning: "The broker could not retrieve the issuer's key set (reason jwks_unavailable); no verdict was reached.",
    hint: "The broker could not reach the OIDC issuer's keys; retrying usually helps.",
  },
  sender_limited: {
    status: 429, routes: ["*"], retryable: true,
    meaning: "The caller's address (behind `TRUST_PROXY_HOPS` proxies, the address they saw; an IPv6 address by its /64) is over `SENDER_REQUESTS_PER_SECOND` with two seconds' worth of its requests already waiting; refused before its request is read. `Retry-After` says when to try again.",
    hint: "The broker is holding this address to its share of requests; retry after the Retry-After delay, and spread the requests it sends.",
  },
  server_busy: {
    status: 503, routes: ["/token", "/webhook"], retryable: true,
    meaning: "The broker is already holding as many bytes of not-yet-authenticated request bodies on this route as it allows (/token 32 MiB, /webhook 64 MiB, counted as they arrive); `Retry-After` says when to try again.",
    hint: "The broker is busy; retry after the Retry-After delay.",
  },
  deadline_exceeded: {
    status: 503, routes: ["*"], retryable: true,
    meaning: "The request was not answered within the broker's 25 s request deadline (e.g. the platform hung); `Retry-After` says when to try again.",
    hint: "The broker could not finish in time (usually a slow platform); retry, and tell the broker's operator if it persists.",
  },
  app_unconfigured: {
    status: 503, routes: ["/token", "/sign", "/releases", "/webhook"], retryable: false,
    meaning: "HOST_APP_ID or HOST_APP_PRIVATE_KEY is not set (or the key does not parse).",
    hint: "The broker's operator must set HOST_APP_ID and HOST_APP_PRIVATE_KEY.",
  },
  app_key_unavailable: {
    status: 503, routes: ["/token", "/sign", "/releases", "/webhook"], retryable: true,
    meaning: "The App key's key store (HOST_APP_KEY_URI: PKCS#11) could not sign the App JWT: the module, the token, the login, the key object or the signature failed (the broker's log and /readyz name the step). The broker tries the key store again on the next request; `Retry-After` says when.",
    hint: "The broker could not reach its App key's key store; retry after the Retry-After delay, and tell the broker's operator if it persists.",
  },
  unauthorized: {
    status: 401, routes: ["/sign", "/releases"], retryable: false,
    meaning: "The bearer secret is missing or wrong.",
    hint: "Send `Authorization: Bearer <PROCESS_TRIGGER_SECRET>`.",
  },
  no_file_changes: {
    status: 400, routes: ["/sign"], retryable: false,
    meaning: "additions and deletions are both empty.",
    hint: "Send at least one addition or deletion.",
  },
  invalid_repo: {
    status: 400, routes: ["/sign"], retryable: false,
    meaning: "repo is not owner/name.",
    hint: "Send repo as owner/name.",
  },
  sign_disabled: {
    status: 503, routes: ["/sign"], retryable: false,
    meaning: "PROCESS_TRIGGER_SECRET is not set, or is refused (shorter than 32 characters, or a placeholder such as replace-me).",
    hint: "The broker's operator must set PROCESS_TRIGGER_SECRET to at least 32 random characters (openssl rand -hex 32) to enable /sign.",
  },
  releases_disabled: {
    status: 503, routes: ["/releases"], retryable: false,
    meaning: "PROCESS_TRIGGER_SECRET is not set, or is refused (shorter than 32 characters, or a placeholder such as replace-me).",
    hint: "The broker's operator must set PROCESS_TRIGGER_SECRET to at least 32 random characters (openssl rand -hex 32) to enable /releases.",
  },
  platform_rate_limited: {
    status: 503, routes: ["/releases"], retryable: true,
    meaning: "The App's platform budget is spent (a rate limit the platform announced, or the App's UPSTREAM_POINTS_PER_MINUTE cannot fit a call before the request's deadline) and there is no aggregate, fresh or within RELEASES_STALE_SECONDS, to answer with; `Retry-After` says when the budget resets.",
    hint: "The broker's platform budget is spent and it has no list to show yet; retry after the Retry-After delay.",
  },
  invalid_signature: {
    status: 401, routes: ["/webhook"], retryable: false,
    meaning: "The X-Hub-Signature-256 HMAC is missing or does not match.",
    hint: "The App's webhook secret and the broker's HOST_WEBHOOK_SECRET must be the same.",
  },
  webhook_disabled: {
    status: 503, routes: ["/webhook"], retryable: false,
    meaning: "HOST_WEBHOOK_SECRET is not set, or is refused (shorter than 32 characters, or a placeholder such as replace-me).",
    hint: "The broker's operator must set HOST_WEBHOOK_SECRET to at least 32 random characters (openssl rand -hex 32) to enable /webhook.",
  },
  webhook_queue_unavailable: {
    status: 503, routes: ["/webhook"], retryable: true,
    meaning: "The durable webhook queue's Redis (`WEBHOOK_QUEUE`) did not answer in time (or the check-run queue is full): the delivery was neither claimed nor queued; `Retry-After` says when to try again.",
    hint: "GitHub does not redeliver by itself: once Redis is back, redeliver the failed delivery from the App's Recent Deliveries (see docs/operations.md).",
  },
  internal_error: {
    status: 500, routes: ["*"], retryable: true,
    meaning: "An unexpected failure inside the broker; nothing internal is disclosed (the broker's log has the detail).",
    hint: "The broker failed unexpectedly; retry, and tell the broker's operator if it persists.",
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.prototype.hasOwnProperty.call(ERROR_CODES, value);
}

/** The `reason` words of a 401 invalid_oidc_token / 503 oidc_key_fetch_failed (docs/design.md#decisions-where-the-contract-was-open). */
export const OIDC_REASONS = {
  malformed_token: { meaning: "Not a compact JWS, or its header or payload is not JSON.", hint: "Send the raw OIDC JWT the runner issued." },
  alg_unsupported: { meaning: "The token is not signed with RS256 (e.g. `none`, HS256).", hint: "Only RS256 tokens from the CI platform are accepted." },
  issuer_mismatch: { meaning: "`iss` is not exactly a trusted issuer (compared as sent: a trailing `/` or whitespace does not match).", hint: "The token does not come from an issuer this broker trusts." },
  kid_not_found: { meaning: "No key in the issuer's key set has the token's `kid`, in a key set fetched after the token arrived.", hint: "The token was signed by a key the issuer does not publish." },
  key_ambiguous: { meaning: "The token has no `kid` and the issuer publishes several keys.", hint: "Send a token with a `kid` header." },
  signature_invalid: { meaning: "The signature does not verify against the issuer's key.", hint: "The token was altered or forged." },
  token_expired: { meaning: "`exp` is in the past (60 s tolerance).", hint: "Request a fresh OIDC token just before calling the broker." },
  token_not_yet_valid: { meaning: "`nbf` or `iat` is in the future (60 s tolerance).", hint: "Check the clocks of the runner and the broker." },
  token_lifetime_exceeded: { meaning: "`exp − iat` is over 1 h, or `iat` is more than 1 h old (the platform's tokens live 5 min).", hint: "Request a fresh OIDC token just before calling the broker; long-lived tokens are refused." },
  audience_mismatch: { meaning: "`aud` names no audience in OIDC_AUDIENCE.", hint: "The action's `oidc-audience` input and the broker's OIDC_AUDIENCE disagree." },
  claim_invalid: { meaning: "A required claim is missing or malformed (e.g. no `repository`, no `exp`).", hint: "The token lacks a claim the broker needs." },
  unknown: { meaning: "Verification failed for a reason not listed above.", hint: "The token was refused; the broker's log has the detail." },
  jwks_unavailable: { meaning: "With 503 oidc_key_fetch_failed: the issuer's key set could not be fetched and no snapshot was usable, or the token's `kid` is unknown and its refetch failed or was held back by the refetch cooldown (no verdict yet; `Retry-After` says when to retry).", hint: "Retry; the broker could not reach the issuer's keys." },
} as const;

export type OidcReason = keyof typeof OIDC_REASONS;
