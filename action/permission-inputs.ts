// The step's `permission-<name>` inputs (action.yml, generated from the platform's catalogue in
// shared/app-permissions.ts), as actions/create-github-app-token spells them: the catalogue's name
// with hyphens (`permission-pull-requests: write`). Together they are the /token request's
// `permissions`; none set means the broker's whole grant, as before these inputs. So a misspelt
// one (`permission-pull-request`, singular) must fail the step: dropped, it would widen the token to
// the whole grant. The runner hands every `with:` key to the step as INPUT_<NAME> (uppercased), known
// to action.yml or not, so the environment is where a misspelt name shows.
import leven from "leven";
import { APP_PERMISSIONS } from "../shared/app-permissions.js";
import { checkCatalogue, type Permissions } from "../shared/token-permissions.js";
import { ActionFailure } from "./action-failure.js";
import type { Env, Toolkit } from "./toolkit.js";
import { shown } from "./untrusted-text.js";

/** The input's name for a catalogue name: `pull_requests` → `permission-pull-requests`. */
export const permissionInputName = (permission: string) => `permission-${permission.replaceAll("_", "-")}`;

/** How many valid names the failure suggests for a misspelt one, at most. */
const SUGGESTIONS = 3;

/**
 * Fails on any INPUT_PERMISSION-* (or INPUT_PERMISSION_*, a name written with underscores) variable
 * that is no input of the catalogue, naming it and the nearest valid names by edit distance.
 */
export function checkPermissionInputNames(env: Env): void {
  const valid = Object.keys(APP_PERMISSIONS).map(permissionInputName);
  const known = new Set(valid.map((name) => `INPUT_${name.toUpperCase()}`));
  const unknown = Object.keys(env)
    .filter((key) => /^INPUT_PERMISSION[-_]/.test(key) && !known.has(key))
    .map((key) => key.slice("INPUT_".length).toLowerCase())
    .sort();
  if (unknown.length === 0) return;
  const [first] = unknown as [string];
  const others = unknown.length > 1 ? ` (also ${unknown.slice(1).map((name) => shown(name, 60)).join(", ")})` : "";
  throw new ActionFailure(
    `tokensmith: ${shown(first, 60)} is not an input of this action${others}; did you mean ${nearest(first, valid).join(" or ")}? ` +
      "A permission input it does not know would be dropped and the token would get the broker's whole grant, so the step stops here (the permission-<name> inputs: docs/action.md#permissions).",
  );
}

/** The valid names nearest to `name` by edit distance: all those at the smallest distance, at most SUGGESTIONS. */
function nearest(name: string, valid: readonly string[]): string[] {
  const ranked = valid.map((candidate) => ({ candidate, distance: leven(name, candidate) })).sort((a, b) => a.distance - b.distance || a.candidate.localeCompare(b.candidate));
  const best = ranked[0]!.distance;
  return ranked.filter((entry) => entry.distance === best).slice(0, SUGGESTIONS).map((entry) => entry.candidate);
}

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
