// Who gets which permissions (docs/policies.md), as one pure function: the grant is
// the intersection of named ceilings (TOKEN_PERMISSIONS, each trust-policy rule that applies, the installation), and
// a step's own request only ever narrows it. Everything here narrows: whatever the ceilings and the
// request, the result is never more than each ceiling allows.
import type { PermissionLevel, Permissions } from "../../shared/token-permissions.js";

/** One source of a limit on the token's permissions, named for the denial's detail. */
export interface PermissionCeiling {
  /** Shown to the caller as is: "TOKEN_PERMISSIONS", "installation", "rule release", … */
  source: string;
  /** Permission name → level the source allows. `admin` (the platform's, for a few names) counts as above write. */
  permissions: Readonly<Record<string, string>>;
}

/** One requested permission a ceiling withheld, and what that ceiling allows for it (undefined: nothing). */
interface Withholding {
  source: string;
  allows?: PermissionLevel;
}

interface WithheldPermission {
  permission: string;
  requested: PermissionLevel;
  /** Every ceiling that withheld it, in the order the ceilings were given (never empty). */
  withheldBy: Withholding[];
}

type PermissionGrant =
  /** The token's permissions: exactly the request when there is one; else the ceilings' intersection (possibly empty). */
  | { ok: true; permissions: Permissions }
  /** The request asked for more than the ceilings allow: each such permission, in request order. */
  | { ok: false; withheld: WithheldPermission[] };

const RANK: Readonly<Record<string, number>> = { read: 1, write: 2, admin: 3 };

// Own properties only: a ceiling or request read from JSON cannot answer for `__proto__`.
const rankIn = (permissions: Readonly<Record<string, unknown>>, name: string): number => {
  const level = Object.hasOwn(permissions, name) ? permissions[name] : undefined;
  return typeof level === "string" && Object.hasOwn(RANK, level) ? RANK[level]! : 0;
};

/**
 * With no request: every permission all ceilings hold, at the lowest level among them (a
 * permission one ceiling lacks is dropped; write becomes read where one allows only read), the
 * first ceiling's order kept. With a request: the request itself when every ceiling allows every
 * requested level, else each permission that some ceiling withholds, named with every such ceiling.
 * No ceilings at all grant nothing.
 */
export function grantPermissions(input: { ceilings: readonly PermissionCeiling[]; requested?: Readonly<Permissions> }): PermissionGrant {
  const { ceilings, requested } = input;
  if (requested === undefined) return { ok: true, permissions: intersect(ceilings) };

  const withheld: WithheldPermission[] = [];
  const granted: Permissions = {};
  for (const [permission, level] of Object.entries(requested)) {
    // A request reaches here parsed (shared/requested-permissions.ts); anything else fails closed.
    if (level !== "read" && level !== "write") throw new TypeError(`requested level of ${permission} is not read or write`);
    const withheldBy: Withholding[] = [];
    for (const ceiling of ceilings) {
      const allows = rankIn(ceiling.permissions, permission);
      if (allows >= RANK[level]!) continue;
      // Below write and not nothing can only be read.
      withheldBy.push(allows === 0 ? { source: ceiling.source } : { source: ceiling.source, allows: "read" });
    }
    if (ceilings.length === 0) withheldBy.push({ source: "no ceiling" });
    if (withheldBy.length > 0) withheld.push({ permission, requested: level, withheldBy });
    else granted[permission] = level;
  }
  return withheld.length > 0 ? { ok: false, withheld } : { ok: true, permissions: granted };
}

function intersect(ceilings: readonly PermissionCeiling[]): Permissions {
  const first = ceilings[0];
  const result: Permissions = {};
  if (!first) return result;
  for (const permission of Object.keys(first.permissions)) {
    const lowest = Math.min(...ceilings.map((ceiling) => rankIn(ceiling.permissions, permission)));
    if (lowest >= RANK.write!) result[permission] = "write";
    else if (lowest === RANK.read) result[permission] = "read";
  }
  return result;
}

/**
 * The denial's one line: each withheld permission with what withheld it, those withheld alike
 * grouped (in request order), e.g. `checks: write, actions: read withheld by TOKEN_PERMISSIONS (not
 * granted); contents: write withheld by installation (read only)`.
 */
export function describeWithheld(withheld: readonly WithheldPermission[]): string {
  const groups = new Map<string, string[]>();
  for (const { permission, requested, withheldBy } of withheld) {
    const by = withheldBy.map(({ source, allows }) => `${source} (${allows === undefined ? "not granted" : `${allows} only`})`).join(", ");
    const names = groups.get(by) ?? [];
    names.push(`${permission}: ${requested}`);
    groups.set(by, names);
  }
  return [...groups].map(([by, names]) => `${names.join(", ")} withheld by ${by}`).join("; ");
}
