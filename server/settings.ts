// Settings are read from the environment on every request (docs/settings.md) and parsed by this pure
// function; `createSettingsReader` memoises on the raw strings so a request costs one string
// comparison per setting, not a key parse.
import { parseTokenPermissions, type PermissionsParse } from "../shared/token-permissions.js";
import { parseAllowlist, type Allowlist } from "./allowlist.js";
import { parseAppCredentials, type CredentialsParse } from "./app-credentials.js";
import { resolveSecretFiles, SECRET_SETTING_NAMES } from "./secret-files.js";
import type { PolicyMode } from "./policy/decide-policy.js";

export type Env = Readonly<Record<string, string | undefined>>;

const DEFAULT_AUDIENCES = ["tokensmith", "release-runner"] as const;
const DEFAULT_API_BASE = "https://api.github.com";
const DEFAULT_OIDC_ISSUER = "https://token.actions.githubusercontent.com";
/** RELEASES_STALE_SECONDS' default: a day, so a dashboard shows yesterday's list through a long platform outage or rate limit. */
const DEFAULT_RELEASES_STALE_SECONDS = 86_400;
const TRUE_WORDS = new Set(["1", "true", "yes", "on"]);

/** One platform the broker can mint on: the main one, or the enterprise tenant. */
export interface PlatformSettings {
  name: "main" | "enterprise";
  issuer: string;
  apiBase: string;
  graphqlUrl: string;
  app: CredentialsParse;
  /** ENT_APP_INSTALLATION_ID: skips the per-repository lookup. */
  installationId: number | null;
}

export interface Settings {
  main: PlatformSettings;
  enterprise: PlatformSettings | null;
  audiences: string[];
  allowedRepositories: Allowlist | null;
  /** SIGN_ALLOWED_REPOSITORIES: the repositories /sign may write to; null = every installed one. */
  signAllowedRepositories: Allowlist | null;
  tokenPermissions: PermissionsParse;
  /** Null when unset, blank or refused (see `weakSecrets`): the routes answer as when unset. */
  processTriggerSecret: string | null;
  webhookSecret: string | null;
  /** Secrets set but refused (a placeholder or too short), with why: names only, never a value. */
  weakSecrets: Array<{ setting: (typeof TRIMMED_SECRETS)[number]; why: string }>;
  /** Secrets whose raw value trimming changed (names only): main.ts warns about each at start-up. */
  trimmedSecrets: string[];
  autoUpdateBranches: boolean;
  jwksCacheUrl: string | null;
  releasesKvUrl: string | null;
  releasesCacheTtlSeconds: number;
  /** RELEASES_STALE_SECONDS: how long past its lifetime the last aggregate may still be served (marked stale). */
  releasesStaleSeconds: number;
  releasesMaxInstallations: number;
  releasesMaxRepositories: number;
  /** Lease of the fleet-wide /releases crawl lock in Redis (renewed while the crawl runs). */
  releasesCrawlLeaseSeconds: number;
  /** WEBHOOK_QUEUE: `redis://…` for the durable push queue; null: in process. */
  webhookQueueUrl: string | null;
  /** UPDATE_BRANCH_PER_MINUTE: update-branch calls per installation per minute. */
  updateBranchPerMinute: number;
  /** UPDATE_BRANCH_PER_HOUR: update-branch calls per installation in any hour. */
  updateBranchPerHour: number;
  /** UPSTREAM_MAX_CONCURRENCY: platform requests in flight at once per platform (API base). */
  upstreamMaxConcurrency: number;
  /** UPSTREAM_POINTS_PER_MINUTE: REST points per App and per installation per minute, per platform, this process. */
  upstreamPointsPerMinute: number;
  /** TOKEN_POLICY: whether /token reads trust policies (docs/policies.md). */
  tokenPolicy: PolicyMode;
  /** POLICY_CACHE_SECONDS: how long a policy file read is used before it is asked again (conditionally). */
  policyCacheSeconds: number;
  /** POLICY_CHECK_RUNS: a pull request that changes a policy file gets a check run with the validation. */
  policyCheckRuns: boolean;
  /** SENDER_REQUESTS_PER_SECOND: requests a second each sender may start (docs/operations.md#senders); 0: no limit. */
  senderRequestsPerSecond: number;
  /** TRUST_PROXY_HOPS: proxies in front of the broker whose X-Forwarded-For names the sender. */
  trustProxyHops: number;
}

/** Every variable the broker reads; the memo key is their raw values. */
export const SETTING_NAMES = [
  "HOST_APP_ID", "HOST_APP_PRIVATE_KEY", "HOST_API_BASE", "HOST_OIDC_ISSUER", "OIDC_AUDIENCE",
  "ALLOWED_REPOSITORIES", "TOKEN_PERMISSIONS", "PROCESS_TRIGGER_SECRET", "HOST_WEBHOOK_SECRET",
  "AUTO_UPDATE_BRANCHES", "ENT_OIDC_ISSUER", "ENT_API_BASE", "ENT_APP_ID", "ENT_APP_PRIVATE_KEY",
  "ENT_APP_INSTALLATION_ID", "SERVICE_JWKS_CACHE", "LEGACY_QUOTA_KV", "RELEASES_CACHE_TTL_SECONDS",
  "RELEASES_STALE_SECONDS", "RELEASES_MAX_INSTALLATIONS", "RELEASES_MAX_REPOSITORIES", "SIGN_ALLOWED_REPOSITORIES",
  "RELEASES_CRAWL_LEASE_SECONDS",
  "WEBHOOK_QUEUE", "UPDATE_BRANCH_PER_MINUTE", "UPDATE_BRANCH_PER_HOUR",
  "UPSTREAM_MAX_CONCURRENCY", "UPSTREAM_POINTS_PER_MINUTE", "TOKEN_POLICY", "POLICY_CACHE_SECONDS", "POLICY_CHECK_RUNS",
  "SENDER_REQUESTS_PER_SECOND", "TRUST_PROXY_HOPS",
  "HOST_APP_KEY_URI", "HOST_APP_KEY_PIN", "HOST_APP_PRIVATE_KEY_NEXT", "HOST_APP_KEY_URI_NEXT",
  "ENT_APP_KEY_URI", "ENT_APP_KEY_PIN", "ENT_APP_PRIVATE_KEY_NEXT", "ENT_APP_KEY_URI_NEXT",
] as const;

export { SECRET_SETTING_NAMES };

const HOST_APP_NAMES = { id: "HOST_APP_ID", key: "HOST_APP_PRIVATE_KEY", uri: "HOST_APP_KEY_URI", pin: "HOST_APP_KEY_PIN", keyNext: "HOST_APP_PRIVATE_KEY_NEXT", uriNext: "HOST_APP_KEY_URI_NEXT" };
const ENT_APP_NAMES = { id: "ENT_APP_ID", key: "ENT_APP_PRIVATE_KEY", uri: "ENT_APP_KEY_URI", pin: "ENT_APP_KEY_PIN", keyNext: "ENT_APP_PRIVATE_KEY_NEXT", uriNext: "ENT_APP_KEY_URI_NEXT" };
const appValues = (env: Env, names: typeof HOST_APP_NAMES) => ({
  id: env[names.id], key: env[names.key], uri: env[names.uri], pin: env[names.pin], keyNext: env[names.keyNext], uriNext: env[names.uriNext],
});

export function parseSettings(env: Env): Settings {
  const main: PlatformSettings = {
    name: "main",
    issuer: normaliseIssuer(env.HOST_OIDC_ISSUER) || DEFAULT_OIDC_ISSUER,
    apiBase: normaliseBase(env.HOST_API_BASE) || DEFAULT_API_BASE,
    graphqlUrl: "",
    app: parseAppCredentials(HOST_APP_NAMES, appValues(env, HOST_APP_NAMES)),
    installationId: null,
  };
  main.graphqlUrl = graphqlUrlFor(main.apiBase);
  const entIssuer = normaliseIssuer(env.ENT_OIDC_ISSUER);
  let enterprise: PlatformSettings | null = null;
  if (entIssuer) {
    const apiBase = normaliseBase(env.ENT_API_BASE);
    enterprise = {
      name: "enterprise",
      issuer: entIssuer,
      apiBase,
      graphqlUrl: apiBase ? graphqlUrlFor(apiBase) : "",
      app: apiBase
        ? parseAppCredentials(ENT_APP_NAMES, appValues(env, ENT_APP_NAMES))
        : { ok: false, missing: ["ENT_API_BASE"] },
      installationId: positiveInteger(env.ENT_APP_INSTALLATION_ID),
    };
  }
  return {
    main,
    enterprise,
    audiences: parseAudiences(env.OIDC_AUDIENCE),
    allowedRepositories: parseAllowlist(env.ALLOWED_REPOSITORIES),
    signAllowedRepositories: parseAllowlist(env.SIGN_ALLOWED_REPOSITORIES),
    tokenPermissions: parseTokenPermissions(env.TOKEN_PERMISSIONS),
    processTriggerSecret: strongSecret(env.PROCESS_TRIGGER_SECRET),
    webhookSecret: strongSecret(env.HOST_WEBHOOK_SECRET),
    weakSecrets: weakSecrets(env),
    trimmedSecrets: secretsChangedByTrimming(env),
    autoUpdateBranches: parseFlag(env.AUTO_UPDATE_BRANCHES),
    jwksCacheUrl: nonEmpty(env.SERVICE_JWKS_CACHE?.trim()),
    releasesKvUrl: nonEmpty(env.LEGACY_QUOTA_KV?.trim()),
    releasesCacheTtlSeconds: positiveInteger(env.RELEASES_CACHE_TTL_SECONDS) ?? 300,
    releasesStaleSeconds: positiveInteger(env.RELEASES_STALE_SECONDS) ?? DEFAULT_RELEASES_STALE_SECONDS,
    releasesMaxInstallations: positiveInteger(env.RELEASES_MAX_INSTALLATIONS) ?? 100,
    releasesMaxRepositories: positiveInteger(env.RELEASES_MAX_REPOSITORIES) ?? 2000,
    releasesCrawlLeaseSeconds: positiveInteger(env.RELEASES_CRAWL_LEASE_SECONDS) ?? 10,
    webhookQueueUrl: nonEmpty(env.WEBHOOK_QUEUE?.trim()),
    updateBranchPerMinute: positiveInteger(env.UPDATE_BRANCH_PER_MINUTE) ?? 60,
    updateBranchPerHour: positiveInteger(env.UPDATE_BRANCH_PER_HOUR) ?? 500,
    upstreamMaxConcurrency: positiveInteger(env.UPSTREAM_MAX_CONCURRENCY) ?? 50,
    upstreamPointsPerMinute: parseUpstreamPointsPerMinute(env.UPSTREAM_POINTS_PER_MINUTE).value,
    tokenPolicy: parsePolicyMode(env.TOKEN_POLICY).mode,
    policyCacheSeconds: positiveInteger(env.POLICY_CACHE_SECONDS) ?? 60,
    policyCheckRuns: parseFlag(env.POLICY_CHECK_RUNS),
    senderRequestsPerSecond: wholeNumber(env.SENDER_REQUESTS_PER_SECOND) ?? DEFAULT_SENDER_REQUESTS_PER_SECOND,
    trustProxyHops: wholeNumber(env.TRUST_PROXY_HOPS) ?? 0,
  };
}

/**
 * TOKEN_POLICY: optional (default), required or off, case-insensitive. Anything else fails closed
 * (required) and is a settings problem: a typo must not switch the policies off.
 */
export function parsePolicyMode(raw: string | undefined): { mode: PolicyMode; problem?: string } {
  const text = (raw ?? "").trim().toLowerCase();
  if (text === "") return { mode: "optional" };
  if (text === "optional" || text === "required" || text === "off") return { mode: text };
  return { mode: "required", problem: "TOKEN_POLICY is not optional, required or off: treated as required (fail closed)" };
}

/** GitHub's REST points a minute per App and per installation (secondary rate limits). */
const DEFAULT_UPSTREAM_POINTS_PER_MINUTE = 900;
/** The dearest call costs 5 points: a smaller budget could never send it. */
const MIN_UPSTREAM_POINTS_PER_MINUTE = 5;

/**
 * UPSTREAM_POINTS_PER_MINUTE: a whole number from 5; unset or blank → GitHub's 900. Anything else
 * is GitHub's 900 too, and a settings problem (the broker logs it, `doctor` fails on it): a fleet
 * that meant to divide the budget must not silently spend all of it in every instance.
 */
export function parseUpstreamPointsPerMinute(raw: string | undefined): { value: number; problem?: string } {
  const text = (raw ?? "").trim();
  if (text === "") return { value: DEFAULT_UPSTREAM_POINTS_PER_MINUTE };
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < MIN_UPSTREAM_POINTS_PER_MINUTE) {
    return { value: DEFAULT_UPSTREAM_POINTS_PER_MINUTE, problem: `UPSTREAM_POINTS_PER_MINUTE is not a whole number from ${MIN_UPSTREAM_POINTS_PER_MINUTE}: using GitHub's ${DEFAULT_UPSTREAM_POINTS_PER_MINUTE} in this process` };
  }
  return { value };
}

/** The secrets that are trimmed before use (a trailing newline from `$(cat file)` or a secret store). */
export const TRIMMED_SECRETS = ["PROCESS_TRIGGER_SECRET", "HOST_WEBHOOK_SECRET"] as const;

/** The names of the secrets whose value trimming changed, for one start-up warning each (never the value). */
function secretsChangedByTrimming(env: Env): string[] {
  return TRIMMED_SECRETS.filter((name) => {
    const raw = env[name];
    return raw !== undefined && raw !== raw.trim();
  });
}

/** The fewest characters a shared secret may have: 32 random characters are beyond guessing at any rate a broker answers. */
export const MIN_SECRET_LENGTH = 32;

// Values copied from an example instead of generated (deploy/kubernetes/secret.example.yaml says
// `replace-me`): compared lowercase with everything but letters and digits removed.
const PLACEHOLDER_WORDS = ["replaceme", "changeme", "changeit", "changethis", "yoursecret", "placeholder", "secretgoeshere"];

/**
 * What is wrong with a set secret, or null when it is usable (or unset: that is not weak, just
 * off). A placeholder copied from an example, or a secret shorter than MIN_SECRET_LENGTH, is
 * refused: the routes it guards answer as when it is unset (fail closed), and the start-up log and
 * `doctor` say why (docs/settings.md#optional).
 */
export function secretWeakness(raw: string | undefined): { why: string } | null {
  const text = (raw ?? "").trim();
  if (text === "") return null;
  const letters = text.toLowerCase().replace(/[^a-z0-9]/g, "");
  if (PLACEHOLDER_WORDS.some((word) => letters.includes(word))) return { why: "is a placeholder, not a generated secret" };
  if (text.length < MIN_SECRET_LENGTH) return { why: `is shorter than ${MIN_SECRET_LENGTH} characters` };
  return null;
}

/** The trimmed secret, or null when unset, blank or refused (a placeholder, too short): it fails closed, as if unset. */
function strongSecret(raw: string | undefined): string | null {
  return secretWeakness(raw) === null ? nonEmpty(raw?.trim()) : null;
}

function weakSecrets(env: Env): Settings["weakSecrets"] {
  return TRIMMED_SECRETS.flatMap((setting) => {
    const weakness = secretWeakness(env[setting]);
    return weakness === null ? [] : [{ setting, ...weakness }];
  });
}

/** Trimmed, empty entries dropped; blank → the default pair (it never accepts nothing). */
export function parseAudiences(raw: string | undefined): string[] {
  const list = splitList(raw);
  return list.length > 0 ? list : [...DEFAULT_AUDIENCES];
}

export { parseAllowlist };

/** Exactly 1, true, yes or on, case-insensitive after trimming. */
export function parseFlag(raw: string | undefined): boolean {
  return TRUE_WORDS.has((raw ?? "").trim().toLowerCase());
}

export function normaliseIssuer(raw: string | undefined): string {
  return (raw ?? "").trim().replace(/\/+$/, "");
}

/** GraphQL endpoint from a REST base (docs/design.md#decisions-where-the-contract-was-open): `/api/v3` → `/api/graphql`, else base + `/graphql`. */
export function graphqlUrlFor(apiBase: string): string {
  return apiBase.endsWith("/api/v3") ? `${apiBase.slice(0, -"/v3".length)}/graphql` : `${apiBase}/graphql`;
}

function normaliseBase(raw: string | undefined): string {
  return (raw ?? "").trim().replace(/\/+$/, "");
}

function splitList(raw: string | undefined): string[] {
  return (raw ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
}

function nonEmpty(raw: string | undefined): string | null {
  return raw === undefined || raw === "" ? null : raw;
}

/** Requests a second per sender when SENDER_REQUESTS_PER_SECOND is unset (docs/operations.md#senders). */
export const DEFAULT_SENDER_REQUESTS_PER_SECOND = 100;

/** A whole number from 0 (0 switches a limit off); anything else null. */
function wholeNumber(raw: string | undefined): number | null {
  const text = (raw ?? "").trim();
  if (!/^[0-9]+$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : null;
}

function positiveInteger(raw: string | undefined): number | null {
  const text = (raw ?? "").trim();
  if (!/^[0-9]+$/.test(text)) return null;
  const value = Number(text);
  return Number.isSafeInteger(value) && value > 0 ? value : null;
}

/**
 * Reads the environment per call (the secrets given as NAME_FILE read from their files: server/secret-files.ts);
 * re-parses only when one of the raw strings changed.
 */
export function createSettingsReader(readEnv: () => Env): () => Settings {
  const lastRaw: Array<string | undefined> = [];
  let last: Settings | undefined;
  return () => {
    const env = resolveSecretFiles(readEnv());
    let changed = last === undefined;
    for (let i = 0; i < SETTING_NAMES.length; i += 1) {
      const raw = env[SETTING_NAMES[i]!];
      if (raw !== lastRaw[i]) {
        lastRaw[i] = raw;
        changed = true;
      }
    }
    if (changed) last = parseSettings(env);
    return last!;
  };
}
