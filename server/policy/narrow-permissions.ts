// The grant as an intersection of named ceilings: TOKEN_PERMISSIONS, then each policy rule that
// applies (`rule <name>`, `owner rule <name>`); the installation is the last ceiling, applied at
// the mint (intersect-permissions.ts). Written to be swapped for the pure grant function of
// server/token/grant-permissions.ts (per-step permissions) once both are on main: same inputs.
import type { Permissions } from "../../shared/token-permissions.js";

export interface PermissionCeiling {
  /** Who set it, as a denial's detail names it: `TOKEN_PERMISSIONS`, `rule release`, … */
  source: string;
  permissions: Readonly<Record<string, string>>;
}

/** Each permission at the lowest level every ceiling allows; one a ceiling lacks is dropped. */
export function narrowPermissions(requested: Readonly<Permissions>, ceilings: readonly PermissionCeiling[]): Permissions {
  const result: Permissions = {};
  for (const [name, level] of Object.entries(requested)) {
    let kept: "read" | "write" | undefined = level;
    for (const ceiling of ceilings) {
      const held = Object.hasOwn(ceiling.permissions, name) ? ceiling.permissions[name] : undefined;
      if (held === "read") kept = "read";
      else if (held !== "write" && held !== "admin") kept = undefined;
      if (kept === undefined) break;
    }
    if (kept !== undefined) result[name] = kept;
  }
  return result;
}
