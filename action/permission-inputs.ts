// The step's `permission-<name>` inputs (action.yml, generated from the platform's catalogue in
// shared/app-permissions.ts), as actions/create-github-app-token spells them: the catalogue's name
// with hyphens (`permission-pull-requests: write`). Together they are the /token request's
// `permissions`; none set means the broker's whole grant, as before these inputs.
import { APP_PERMISSIONS } from "../shared/app-permissions.js";
import { checkCatalogue, type Permissions } from "../shared/token-permissions.js";
import { ActionFailure } from "./action-failure.js";
import type { Toolkit } from "./toolkit.js";
import { shown } from "./untrusted-text.js";

/** The input's name for a catalogue name: `pull_requests` → `permission-pull-requests`. */
export const permissionInputName = (permission: string) => `permission-${permission.replaceAll("_", "-")}`;

/** The permissions the step asks for, or undefined when no permission input is set. */
export function readPermissionInputs(core: Pick<Toolkit, "getInput">): Permissions | undefined {
  const permissions: Permissions = {};
  for (const permission of Object.keys(APP_PERMISSIONS)) {
    const input = permissionInputName(permission);
    const raw = core.getInput(input).trim();
    if (raw === "") continue;
    if (raw !== "read" && raw !== "write") throw new ActionFailure(`tokensmith: ${input} must be read or write, not ${shown(raw, 40)}.`);
    const problem = checkCatalogue(permission, raw);
    if (problem) throw new ActionFailure(`tokensmith: ${input}: ${problem}.`);
    permissions[permission] = raw;
  }
  return Object.keys(permissions).length > 0 ? permissions : undefined;
}
