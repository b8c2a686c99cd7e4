// TOKEN_PERMISSIONS (docs/settings.md): a JSON object, or a comma-separated list of key=value / key:value
// pairs. Keys are the platform's App permission names (lowercase, underscores); values exactly
// `read` or `write`. Blank or unset → the default. Anything else, or nothing usable, is an error
// (every /token request then answers 400 invalid_token_permissions).
// Keys and levels are checked against the platform's published catalogue (shared/app-permissions.ts,
// generated from GitHub's OpenAPI `app-permissions` schema): an unknown key, or a level the platform
// does not offer for that key (`workflows` and `profile` are offered as write only), would make
// every mint fail, so the setting is unusable.
import { APP_PERMISSIONS } from "./app-permissions.js";

export type PermissionLevel = "read" | "write";
export type Permissions = Record<string, PermissionLevel>;

export const DEFAULT_TOKEN_PERMISSIONS: Readonly<Permissions> = Object.freeze({
  contents: "write",
  pull_requests: "write",
});

export type PermissionsParse = { ok: true; permissions: Permissions } | { ok: false; problem: string };

// Lowercase words joined by single underscores (the platform's names); `__proto__` cannot pass.
const KEY = /^[a-z]+(?:_[a-z]+)*$/;

export function parseTokenPermissions(raw: string | undefined): PermissionsParse {
  const text = (raw ?? "").trim();
  if (text === "") return { ok: true, permissions: { ...DEFAULT_TOKEN_PERMISSIONS } };
  const entries = text.startsWith("{") ? jsonEntries(text) : pairEntries(text);
  if (typeof entries === "string") return { ok: false, problem: entries };
  if (entries.length === 0) return { ok: false, problem: "no permissions given" };
  // A null-prototype object: a key such as __proto__ cannot reach Object.prototype.
  const permissions: Permissions = Object.create(null);
  for (const [key, value] of entries) {
    if (!KEY.test(key)) return { ok: false, problem: `invalid permission name ${JSON.stringify(key)}` };
    if (value !== "read" && value !== "write") {
      return { ok: false, problem: `permission ${key} must be read or write` };
    }
    const catalogueProblem = checkCatalogue(key, value);
    if (catalogueProblem) return { ok: false, problem: catalogueProblem };
    if (key in permissions && permissions[key] !== value) {
      return { ok: false, problem: `permission ${key} given twice` };
    }
    permissions[key] = value;
  }
  return { ok: true, permissions: { ...permissions } };
}

/** Is `key` a permission the platform publishes, and does it offer `level` for it? */
export function checkCatalogue(key: string, level: PermissionLevel): string | undefined {
  // hasOwn: a name such as `constructor` must not be found on Object.prototype.
  const offered = Object.hasOwn(APP_PERMISSIONS, key) ? APP_PERMISSIONS[key]! : undefined;
  if (!offered) return `unknown permission ${key} (not in the platform's App permission catalogue)`;
  if (!offered.includes(level)) return `permission ${key} cannot be ${level}: the platform offers ${offered.join(" or ")}`;
  return undefined;
}

function jsonEntries(text: string): Array<[string, unknown]> | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return "not valid JSON";
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return "not a JSON object";
  return Object.entries(parsed);
}

function pairEntries(text: string): Array<[string, string]> | string {
  const entries: Array<[string, string]> = [];
  for (const part of text.split(",")) {
    const item = part.trim();
    if (item === "") continue;
    const match = /^([^=:]+)[=:](.*)$/.exec(item);
    if (!match) return `expected key=value or key:value, got ${JSON.stringify(item)}`;
    entries.push([match[1]!.trim(), match[2]!.trim()]);
  }
  return entries;
}
