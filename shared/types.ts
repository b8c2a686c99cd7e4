// The wire contract of the four routes (spec section 2). Both the action and the server import it.
import type { ErrorCode, OidcReason } from "./error-codes.js";
import type { Permissions } from "./token-permissions.js";

/** Body of POST /token (docs/api.md#post-token). */
export interface TokenRequest {
  oidcToken: string;
  owner: string;
  repo: string;
  /** Logging only; never authorises anything. */
  ref?: string;
  runId?: string;
  sha?: string;
  /**
   * The step's own narrowing (docs/api.md#post-token): the token gets exactly these, or the
   * answer is 403 permissions_not_granted. Absent: the grant (TOKEN_PERMISSIONS ∩ installation).
   */
  permissions?: Permissions;
  /**
   * Other repositories of the same owner the one token should also cover (docs/policies.md#other-repositories
   * repositories"): names, each consenting in its own trust policy, or the answer is 403 policy_denied.
   */
  repositories?: string[];
}

/** 200 of POST /token (docs/api.md#post-token). */
export interface TokenResponse {
  token: string;
  /** Passed through unchanged from the platform. */
  expires_at: string;
  /** owner/name */
  repository: string;
  /**
   * Additive to the API's three fields (the action's `installation-id` and `app-slug` outputs, as
   * actions/create-github-app-token has them); absent from older brokers, so optional here.
   */
  installation_id?: number;
  /** The App's slug: its bot is `<slug>[bot]` (git author name for commits made with the token). */
  app_slug?: string;
  /** The token's real permissions, as the platform's mint answered them (additive, like the two above). */
  permissions?: Record<string, string>;
  /** Only when the request named other `repositories`: every repository the token covers (owner/name), the caller's first. */
  repositories?: string[];
}

export interface FileAddition {
  path: string;
  /** base64 */
  contents: string;
}

export interface FileDeletion {
  path: string;
}

/** Body of POST /sign (docs/api.md#post-sign). */
export interface SignRequest {
  repo: string;
  branch: string;
  expected_head_oid: string;
  message: { headline: string; body?: string };
  additions?: FileAddition[];
  deletions?: FileDeletion[];
  /** Accepted and ignored: commits are always App-attributed. */
  user?: string;
}

/** 200 of POST /sign. `commit` is the platform's commit object. */
export interface SignResponse {
  ok: true;
  commit: Record<string, unknown>;
}

export interface LatestRelease {
  tag: string;
  name: string;
  /** null for a draft (docs/design.md#decisions-where-the-contract-was-open). */
  published_at: string | null;
  url: string;
  draft: boolean;
  prerelease: boolean;
}

export interface RepoReleases {
  repo: string;
  latest: LatestRelease | null;
}

/** 200 of GET /releases (docs/api.md#get-releases). */
export interface ReleasesResponse {
  generated_at: string;
  repos: RepoReleases[];
  truncated: boolean;
  cached: boolean;
  /**
   * Added to the API's shape: present (true) only when the aggregate is past its lifetime and
   * served while a refresh runs or the platform's budget is spent; absent on a fresh answer.
   */
  stale?: true;
  /** With `stale`: whole seconds since `generated_at`. */
  age_seconds?: number;
}

/** 200 of POST /webhook for an event other than push. */
export interface WebhookIgnoredResponse {
  ok: true;
  ignored: string;
}

/** 202 (queued) or 200 (skipped) of POST /webhook for a push (docs/design.md#decisions-where-the-contract-was-open). */
export type WebhookPushResponse =
  | { ok: true; event: "push"; queued: true; repository: string; branch: string; delivery: string | null }
  | { ok: true; event: "push"; skipped: string; duplicate?: boolean };

/** 202 (queued) or 200 (skipped) of POST /webhook for a pull_request, only with POLICY_CHECK_RUNS on (docs/design.md#decisions-where-the-contract-was-open). */
export type WebhookPullRequestResponse =
  | { ok: true; event: "pull_request"; queued: true; repository: string; number: number; delivery: string | null }
  | { ok: true; event: "pull_request"; skipped: string; duplicate?: boolean };

/** Every failure (docs/errors.md). */
export interface ErrorBody {
  error: ErrorCode;
  reason?: OidcReason;
  /** One human line (docs/errors.md): what to change; `error` stays the code to match on. */
  detail?: string;
}
