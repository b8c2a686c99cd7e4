import type { Permissions } from "../../shared/token-permissions.js";
import { own } from "../http/fields.js";

/**
 * What to ask the platform for: the requested permissions cut down to what the installation holds.
 * The platform answers 422 to a mint that asks for more, but the API wants a token without the
 * missing permission instead: a permission the installation lacks is dropped, `write` becomes
 * `read` where only read was granted. If nothing is left, ask for `metadata: read` (which every
 * installation holds): an empty request would mean "every permission the installation has".
 */
export function intersectPermissions(requested: Permissions, granted: Record<string, unknown>): Permissions {
  const result: Permissions = {};
  for (const [name, level] of Object.entries(requested)) {
    const held = own(granted, name);
    if (held === "write" || held === "admin") result[name] = level;
    else if (held === "read") result[name] = "read";
  }
  return Object.keys(result).length > 0 ? result : { metadata: "read" };
}
