// The permission-<name> inputs as a Markdown table for docs/action.md (scripts/update-readme.js
// writes it; test/permission-inputs.test.ts holds the page to it). Not imported by main.
import { APP_PERMISSIONS } from "../shared/app-permissions.js";
import { permissionInputName } from "./permission-inputs.js";

export function permissionInputsMarkdown(): string {
  const rows = Object.keys(APP_PERMISSIONS)
    .sort()
    .map((permission) => {
      const levels = APP_PERMISSIONS[permission]!.filter((level) => level === "read" || level === "write");
      return `| \`${permissionInputName(permission)}\` | \`${permission}\` | ${levels.map((level) => `\`${level}\``).join(", ")} |`;
    });
  return ["| Input | Permission asked for | Values |", "|---|---|---|", ...rows].join("\n");
}
