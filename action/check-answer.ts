// The broker's 200 answer, checked before any of it is used: the action runs next to the job's
// secrets, and whatever answers at broker-url (a misconfigured proxy, a compromised host) must not
// be able to steer it. Pure: `now` is given, nothing is printed here.
import { isInstallationToken, MAX_INSTALLATION_TOKEN_LENGTH } from "../shared/installation-token.js";
import type { Permissions } from "../shared/token-permissions.js";
import type { TokenResponse } from "../shared/types.js";
import { shown } from "./untrusted-text.js";

/** Classic tokens are 40 characters, the stateless format ~520: both far below this bound (shared/installation-token.ts). */
export const MAX_TOKEN_LENGTH = MAX_INSTALLATION_TOKEN_LENGTH;
/** Installation tokens live an hour; a token said to live longer than a day is not one. */
const MAX_LIFETIME_MS = 24 * 60 * 60 * 1000;

// ISO 8601 in UTC to the second, as the platform writes it: 2026-01-01T00:00:00Z.
const UTC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
// A GitHub App slug: letters, digits and hyphens.
const SLUG = /^[a-z0-9][a-z0-9-]{0,99}$/i;
// A platform permission name (lowercase words joined by underscores) and a level the platform writes.
const PERMISSION_NAME = /^[a-z]{1,40}(?:_[a-z]{1,40}){0,9}$/;
const LEVEL_RANK: Readonly<Record<string, number>> = { read: 1, write: 2, admin: 3 };
/** Far more than the platform's catalogue (about 60 names): a bigger map is not a token's permissions. */
const MAX_ANSWER_PERMISSIONS = 200;

type AnswerCheck =
  | { ok: true; answer: Required<Pick<TokenResponse, "token" | "expires_at" | "repository" | "repositories">> & Pick<TokenResponse, "installation_id" | "app_slug" | "permissions"> }
  /** `token` is set when the answer carried a usable token: it must be masked and revoked. */
  | { ok: false; problem: string; token?: string };

/**
 * A token that can be masked and revoked, or undefined: checked first, so it can be masked before
 * anything else. Only an installation token's shape counts (shared/installation-token.ts): a
 * broker answering `"token": "e"` would otherwise have the runner mask every `e` of the log, and
 * send whatever it chose to the platform as a bearer.
 */
export function usableToken(body: unknown): string | undefined {
  const token = field(body, "token");
  return isInstallationToken(token) ? token : undefined;
}

/**
 * An `expires_at` that names a real instant, written as the platform writes it: Date.parse reads
 * `T24:00:00Z` as the next midnight and February 30 as March 2, so the text must come back
 * unchanged from the instant it parsed to (to the second).
 */
export function strictUtcTime(value: unknown): number {
  if (typeof value !== "string" || !UTC_TIME.test(value)) return NaN;
  const time = Date.parse(value);
  return Number.isFinite(time) && new Date(time).toISOString().replace(/\.000Z$/, "Z") === value ? time : NaN;
}

/**
 * The answer against what the step asked for: `repositories` holds the job's own repository (and,
 * with the trust-policy work, the ones the step's `repositories` input names); `permissions` what
 * the step's permission-<name> inputs asked for, when any is set.
 */
export function checkAnswer(body: unknown, expected: { repositories: readonly string[]; now: number; permissions?: Permissions; others?: readonly string[] }): AnswerCheck {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { ok: false, problem: "the answer is not a JSON object" };
  const token = usableToken(body);
  if (token === undefined) {
    const raw = field(body, "token");
    const what =
      typeof raw !== "string"
        ? "no token"
        : raw.length > MAX_TOKEN_LENGTH
          ? `a token longer than ${MAX_TOKEN_LENGTH} characters`
          : "a token that is not an installation token (ghs_ followed by at least 36 of A-Z, a-z, 0-9, dot and underscore); it was neither masked nor used";
    return { ok: false, problem: `the answer carries ${what}` };
  }
  const refuse = (problem: string): AnswerCheck => ({ ok: false, problem, token });

  const repository = field(body, "repository");
  if (repository === undefined) return refuse("the answer names no repository");
  if (typeof repository !== "string" || !expected.repositories.includes(repository)) {
    return refuse(`the token is for repository ${shown(repository)}, not ${expected.repositories.map((r) => shown(r)).join(" or ")}`);
  }

  const expiresAt = field(body, "expires_at");
  if (expiresAt === undefined) return refuse("the answer has no expires_at");
  const expiry = strictUtcTime(expiresAt);
  if (!Number.isFinite(expiry)) return refuse(`expires_at ${shown(expiresAt)} is not a real time written as the platform writes it (YYYY-MM-DDThh:mm:ssZ)`);
  if (expiry <= expected.now) return refuse(`expires_at ${shown(expiresAt)} is in the past`);
  if (expiry - expected.now > MAX_LIFETIME_MS) return refuse(`expires_at ${shown(expiresAt)} is more than a day ahead`);

  // Additive fields (brokers before them send neither): absent is fine, present must be well formed.
  const installationId = field(body, "installation_id");
  if (installationId !== undefined && !(Number.isSafeInteger(installationId) && (installationId as number) > 0)) {
    return refuse(`installation_id ${shown(installationId)} is not a positive integer`);
  }
  const appSlug = field(body, "app_slug");
  if (appSlug !== undefined && !(typeof appSlug === "string" && SLUG.test(appSlug))) return refuse(`app_slug ${shown(appSlug)} is not an App slug`);

  const permissions = readAnswerPermissions(field(body, "permissions"), expected.permissions);
  if (typeof permissions === "string") return refuse(permissions);

  const covered = readAnswerRepositories(field(body, "repositories"), repository, expected.others);
  if (typeof covered === "string") return refuse(covered);

  return {
    ok: true,
    answer: {
      token,
      expires_at: expiresAt as string,
      repository,
      ...(installationId !== undefined ? { installation_id: installationId as number } : {}),
      ...(appSlug !== undefined ? { app_slug: appSlug as string } : {}),
      ...(permissions !== undefined ? { permissions } : {}),
      repositories: covered,
    },
  };
}

/** More than a request may name (shared/repository-names.ts), with room: a longer list is not this token's. */
const MAX_ANSWER_REPOSITORIES = 100;

/**
 * Every repository the token covers (owner/name), the job's own first. A step that named others
 * (`others`, owner/name) must get exactly those and its own, in any order, compared
 * case-insensitively as the platform names repositories: fewer, and the step would fail later on a
 * repository it thought covered; more, and the broker gave what nobody asked for. Without others,
 * the list is the job's own repository (a broker sends `repositories` only when asked).
 */
function readAnswerRepositories(value: unknown, repository: string, others: readonly string[] | undefined): string[] | string {
  if (others === undefined || others.length === 0) return [repository];
  if (value === undefined) return "the answer does not list the repositories the token covers, though the step's repositories input named some (a broker too old for it ignores it)";
  if (!Array.isArray(value) || value.length > MAX_ANSWER_REPOSITORIES || !value.every((entry) => typeof entry === "string" && /^[\x21-\x7e]{1,201}$/.test(entry))) {
    return `repositories ${shown(value)} is not a list of repository names`;
  }
  const listed = value as string[];
  const wanted = [repository, ...others].map((name) => name.toLowerCase()).sort();
  const got = listed.map((name) => name.toLowerCase()).sort();
  if (listed[0] !== repository || wanted.length !== got.length || wanted.some((name, i) => name !== got[i])) {
    return `the token covers ${listed.map((name) => shown(name)).join(", ")}, not ${[repository, ...others].join(", ")} as the step asked`;
  }
  return [...listed];
}

/**
 * The answer's `permissions` (additive: a broker before it sends none), or the problem with it. A
 * step that asked for permissions must get them confirmed, and nothing beyond them: a broker that
 * does not know the request (or ignores it) would hand out its whole grant. `metadata: read` is
 * beyond no request: the platform gives it to every installation token.
 */
function readAnswerPermissions(value: unknown, asked: Permissions | undefined): Record<string, string> | undefined | string {
  if (value === undefined) {
    return asked ? "the answer does not say which permissions the token has, though the step's permission-<name> inputs asked for some (a broker too old for them ignores them)" : undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return `permissions ${shown(value)} is not an object`;
  const entries = Object.entries(value);
  if (entries.length > MAX_ANSWER_PERMISSIONS) return `permissions names more than ${MAX_ANSWER_PERMISSIONS} permissions`;
  const permissions: Record<string, string> = {};
  for (const [name, level] of entries) {
    if (!PERMISSION_NAME.test(name)) return `permissions names ${shown(name, 40)}, not a permission name`;
    if (typeof level !== "string" || !Object.hasOwn(LEVEL_RANK, level)) return `permission ${name} is ${shown(level, 20)}, not read, write or admin`;
    if (asked && !(name === "metadata" && level === "read")) {
      const wanted = Object.hasOwn(asked, name) ? asked[name]! : undefined;
      if (wanted === undefined || LEVEL_RANK[level]! > LEVEL_RANK[wanted]!) {
        return `the token has ${name}: ${level}, beyond what the step's permission-<name> inputs asked for (${describe(asked)})`;
      }
    }
    permissions[name] = level;
  }
  return permissions;
}

const describe = (permissions: Permissions) =>
  Object.entries(permissions)
    .map(([name, level]) => `${name}: ${level}`)
    .join(", ");

/** An own property only: `__proto__` or `constructor` in a hostile body read nothing from Object.prototype. */
function field(body: unknown, name: string): unknown {
  return typeof body === "object" && body !== null && Object.hasOwn(body, name) ? (body as Record<string, unknown>)[name] : undefined;
}
