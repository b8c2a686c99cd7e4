// The step's inputs (action.yml) and the job's default variables, checked once, up front.
import { isLoopbackHost } from "../shared/loopback-address.js";
import { redactUrl } from "../shared/redact-url.js";
import { ActionFailure } from "./action-failure.js";
import type { Permissions } from "../shared/token-permissions.js";
import { MAX_OTHER_REPOSITORIES, readRepositoryName } from "../shared/repository-names.js";
import { checkPermissionInputNames, readPermissionInputs } from "./permission-inputs.js";
import type { Env, Toolkit } from "./toolkit.js";
import { shown } from "./untrusted-text.js";

export const SUPPORTED_AUTH_MODES = ["public-app"] as const;
const DEFAULT_AUDIENCE = "tokensmith";
/** The step's bound on its own time (input `timeout-seconds`), and the most it may be set to. */
export const DEFAULT_TIMEOUT_SECONDS = 90;
export const MAX_TIMEOUT_SECONDS = 3600;

export interface Inputs {
  authMode: (typeof SUPPORTED_AUTH_MODES)[number];
  /** Origin of the broker, without a trailing slash. */
  brokerUrl: string;
  /** Tried when the primary is unreachable; undefined when empty or the same as the primary. */
  fallbackUrl?: string;
  /** The platform's REST base, where a refused answer's token is revoked (readApiUrl). */
  apiUrl: string;
  audience: string;
  skipTokenRevoke: boolean;
  /** Whole seconds; the step ends within them, both brokers hanging included. */
  timeoutSeconds: number;
  /** The job's own repository (GITHUB_REPOSITORY): the one the token is asked for. */
  owner: string;
  repo: string;
  /**
   * The repositories (owner/name) the answer's `repository` may name: the job's own. The answer
   * keeps `repository` as the caller's and lists the others in `repositories` (check-answer.ts).
   */
  repositories: string[];
  /**
   * The `repositories` input: other repositories of the job's owner (names, the job's own left
   * out) the one token should also cover, each consenting in its own trust policy (the body's
   * `repositories`); undefined when the input is empty.
   */
  otherRepositories?: string[];
  /** `policy-rule`: the trust-policy rule the job asks for by name (the body's `rule`). */
  rule?: string;
  /** The `permission-<name>` inputs (permission-inputs.ts); undefined when none is set: the broker's whole grant. */
  permissions?: Permissions;
  /** Sent for the broker's logs only. */
  ref?: string;
  runId?: string;
  sha?: string;
}

export function readInputs(core: Pick<Toolkit, "getInput">, env: Env): Inputs {
  const authMode = core.getInput("auth-mode");
  if (!isSupportedMode(authMode)) {
    const given = authMode === "" ? "auth-mode is not set" : `auth-mode "${authMode}" is not supported`;
    throw new ActionFailure(`tokensmith: ${given}; supported modes: ${SUPPORTED_AUTH_MODES.join(", ")}.`);
  }
  const brokerUrl = brokerOrigin("broker-url", core.getInput("broker-url"));
  if (!brokerUrl) throw new ActionFailure("tokensmith: broker-url is required with auth-mode: public-app (the broker's origin, e.g. https://tokensmith.example.com).");
  const fallback = brokerOrigin("broker-fallback-url", core.getInput("broker-fallback-url"));

  const repository = env.GITHUB_REPOSITORY ?? "";
  const match = /^([^/\s]+)\/([^/\s]+)$/.exec(repository);
  if (!match) throw new ActionFailure(`tokensmith: GITHUB_REPOSITORY is "${repository}", not owner/name; run this step in a GitHub Actions job.`);

  checkPermissionInputNames(env);
  const permissions = readPermissionInputs(core);
  const otherRepositories = readRepositories(core.getInput("repositories"), match[1]!, match[2]!);
  return {
    authMode,
    brokerUrl,
    ...(fallback && fallback !== brokerUrl ? { fallbackUrl: fallback } : {}),
    apiUrl: readApiUrl(core.getInput("github-api-url"), env),
    audience: core.getInput("oidc-audience") || DEFAULT_AUDIENCE,
    skipTokenRevoke: readBoolean("skip-token-revoke", core.getInput("skip-token-revoke")),
    timeoutSeconds: readTimeoutSeconds(core.getInput("timeout-seconds")),
    owner: match[1]!,
    repo: match[2]!,
    repositories: [repository],
    ...(otherRepositories.length > 0 ? { otherRepositories } : {}),
    ...readRule(core.getInput("policy-rule")),
    ...(permissions ? { permissions } : {}),
    ...optional("ref", env.GITHUB_REF),
    ...optional("runId", env.GITHUB_RUN_ID),
    ...optional("sha", env.GITHUB_SHA),
  };
}

/**
 * `repositories`: names (or owner/name of the job's own owner) separated by commas or new lines, as
 * actions/create-github-app-token reads its input of that name; blanks ignored, the job's own
 * repository left out (it is always covered), each other one at most once, at most
 * MAX_OTHER_REPOSITORIES. The broker checks the same (400 invalid_repositories).
 */
export function readRepositories(raw: string, owner: string, repo: string): string[] {
  const names: string[] = [];
  const seen = new Set<string>([repo.toLowerCase()]);
  for (const entry of raw.split(/[,\n]/).map((part) => part.trim()).filter((part) => part !== "")) {
    const read = readRepositoryName(entry, owner);
    if (!read.ok) throw new ActionFailure(`tokensmith: repositories: ${read.problem}.`);
    const key = read.name.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    names.push(read.name);
  }
  if (names.length > MAX_OTHER_REPOSITORIES) throw new ActionFailure(`tokensmith: repositories names ${names.length} other repositories; at most ${MAX_OTHER_REPOSITORIES}.`);
  return names;
}

/** `policy-rule`: a rule name as policies spell them ([a-z0-9-]+), or empty. */
function readRule(raw: string): { rule?: string } {
  const text = raw.trim();
  if (text === "") return {};
  if (!/^[a-z0-9-]{1,64}$/.test(text)) throw new ActionFailure(`tokensmith: policy-rule "${text.slice(0, 64)}" is not a rule name (lowercase letters, digits and hyphens).`);
  return { rule: text };
}

function isSupportedMode(mode: string): mode is Inputs["authMode"] {
  return (SUPPORTED_AUTH_MODES as readonly string[]).includes(mode);
}

/** The broker's origin (input `name`), or undefined when empty. */
function brokerOrigin(name: string, raw: string): string | undefined {
  return httpsUrl(name, raw, "the broker's origin, e.g. https://tokensmith.example.com");
}

/** `github-api-url`, else the runner's GITHUB_API_URL (GHES: https://HOST/api/v3), else github.com's: where the token is revoked. */
export function readApiUrl(input: string, env: Env): string {
  return httpsUrl("github-api-url", input.trim() || env.GITHUB_API_URL || DEFAULT_API_URL, "the REST API's base, e.g. https://ghes.example.com/api/v3")!;
}

const DEFAULT_API_URL = "https://api.github.com";

/**
 * An http(s) URL, trailing slashes dropped (so "https://b/" and "https://b" are one address).
 * Plain http only to this machine (127.0.0.0/8, ::1, localhost: a broker or sandbox on the runner
 * itself): anywhere else the OIDC token and the installation token would cross the network in clear.
 * Nothing of a value that fails is echoed but its redacted form: it may hold a password.
 */
function httpsUrl(name: string, raw: string, wanted: string): string | undefined {
  const text = raw.trim().replace(/\/+$/, "");
  if (text === "") return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ActionFailure(`tokensmith: ${name} is not a URL; give ${wanted}.`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ActionFailure(`tokensmith: ${name} must be an https URL, not ${shown(url.protocol, 20)}.`);
  }
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    throw new ActionFailure(`tokensmith: ${name} ${redactUrl(text)} is plain http to a host that is not this machine: the job's OIDC token and the installation token would cross the network unencrypted; use https (plain http is accepted only for 127.0.0.0/8, ::1 and localhost).`);
  }
  return text;
}

/** Whole seconds, 1 to MAX_TIMEOUT_SECONDS; empty (input absent) is the default. */
function readTimeoutSeconds(raw: string): number {
  const text = raw.trim();
  if (text === "") return DEFAULT_TIMEOUT_SECONDS;
  const value = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(value >= 1 && value <= MAX_TIMEOUT_SECONDS)) {
    throw new ActionFailure(`tokensmith: timeout-seconds must be a whole number of seconds from 1 to ${MAX_TIMEOUT_SECONDS}, not "${text}".`);
  }
  return value;
}

/** YAML 1.2 core booleans, as core.getBooleanInput; empty (input absent) is the default, false. */
export function readBoolean(name: string, raw: string): boolean {
  if (["true", "True", "TRUE"].includes(raw)) return true;
  if (["false", "False", "FALSE", ""].includes(raw)) return false;
  throw new ActionFailure(`tokensmith: ${name} must be true or false, not "${raw}".`);
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value ? ({ [key]: value } as Record<K, string>) : {};
}
