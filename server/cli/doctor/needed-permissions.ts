import type { Permissions } from "../../../shared/token-permissions.js";
import { PUSH_PERMISSIONS } from "../../webhook/mint-for-push.js";

/** What each feature asks an installation for (doctor compares an installation's grant with these). */
export interface Need {
  feature: string;
  permissions: Readonly<Record<string, "read" | "write">>;
}

/** /sign mints `contents: write` (server/routes/sign.ts). */
export const SIGN_PERMISSIONS = { contents: "write" } as const;

/**
 * Auto-update: update-branch (PUSH_PERMISSIONS), and `workflows: write` so a base branch that
 * changed a workflow file can be merged into a pull request's branch (the push token asks for it
 * when the installation holds it: server/webhook/mint-for-push.ts).
 */
export const AUTO_UPDATE_PERMISSIONS = { ...PUSH_PERMISSIONS, workflows: "write" } as const;

export function neededPermissions(tokenPermissions: Permissions | null, autoUpdate: boolean): Need[] {
  const needs: Need[] = [];
  if (tokenPermissions) needs.push({ feature: "TOKEN_PERMISSIONS", permissions: tokenPermissions });
  needs.push({ feature: "/sign", permissions: SIGN_PERMISSIONS });
  if (autoUpdate) needs.push({ feature: "auto-update", permissions: AUTO_UPDATE_PERMISSIONS });
  return needs;
}

const LEVEL: Record<string, number> = { read: 1, write: 2, admin: 3 };

/** `name: level` for every permission of `need` the grant lacks or grants lower. */
export function missingFrom(granted: Record<string, string>, need: Need["permissions"]): string[] {
  return Object.entries(need)
    .filter(([name, level]) => (LEVEL[granted[name] ?? ""] ?? 0) < (LEVEL[level] ?? 0))
    .map(([name, level]) => `${name}: ${level}${granted[name] ? ` (granted ${granted[name]})` : ""}`);
}

export function describePermissions(permissions: Record<string, string>): string {
  const names = Object.keys(permissions).sort();
  return names.length ? names.map((name) => `${name}: ${permissions[name]}`).join(", ") : "none";
}
