// The optional `permissions` of a POST /token body (docs/api.md#post-token): the step's own
// narrowing of its token. Same names and values as TOKEN_PERMISSIONS: the platform's App permission
// names (shared/app-permissions.ts), each `read` or `write`. The broker parses it here; the action
// builds it from its `permission-<name>` inputs with the same catalogue check.
import { checkCatalogue, type Permissions } from "./token-permissions.js";

export type RequestedPermissionsParse = { ok: true; permissions: Permissions } | { ok: false; problem: string };

// Lowercase words joined by single underscores, as the platform names them.
const NAME = /^[a-z]+(?:_[a-z]+)*$/;

/** A name as the problem line shows it: the caller's own text, quoted and cut short. */
const quoted = (name: string) => JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);

/**
 * A JSON object naming at least one permission, each known to the catalogue at a level it offers
 * (`read` or `write`). Anything else is a problem naming the first entry at fault. An empty object is
 * refused: it would read as "no permissions" to one person and "every permission" to the platform.
 */
export function parseRequestedPermissions(value: unknown): RequestedPermissionsParse {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, problem: "permissions is not a JSON object" };
  const entries = Object.entries(value);
  if (entries.length === 0) return { ok: false, problem: "permissions names no permission" };
  // Null prototype while filling: a `__proto__` key cannot reach Object.prototype (it fails NAME anyway).
  const permissions: Permissions = Object.create(null);
  for (const [name, level] of entries) {
    if (!NAME.test(name)) return { ok: false, problem: `permission name ${quoted(name)} is not lowercase words joined by underscores` };
    // No platform name is this long; the problem line must not echo a body-sized name back.
    if (name.length > 64) return { ok: false, problem: `unknown permission ${quoted(name)} (not in the platform's App permission catalogue)` };
    if (level !== "read" && level !== "write") return { ok: false, problem: `permission ${name} must be "read" or "write"` };
    const problem = checkCatalogue(name, level);
    if (problem) return { ok: false, problem };
    permissions[name] = level;
  }
  return { ok: true, permissions: { ...permissions } };
}
