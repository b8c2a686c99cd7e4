// The simulator's route table as the Markdown table docs/sandbox.md shows (test/sandbox-route-list.test.ts
// checks the doc's copy against it, and rewrites it with TOKENSMITH_UPDATE_DOCS=1): one row per
// method and path, in GitHub's path-template spelling, with the REST operation it implements.
import { githubRestDescription } from "./openapi-validate.js";

export function routeTableMarkdown(routes: ReadonlyArray<{ method: string; pattern: string }>): string {
  const rows = new Map<string, [string, string, string]>();
  for (const { method, pattern } of routes) {
    const operation = githubRestDescription().operation(method, pattern.replace(/\/\*$/, "/:rest"));
    const path = operation?.path ?? pattern.replace(/\/\*$/, "/{…}").replace(/:([A-Za-z_]+)/g, "{$1}");
    const what = operation ? `[${operation.operationId}](${operation.documentationUrl})` : "—";
    rows.set(`${method} ${path}`, [method, `\`${path}\``, what]);
  }
  const sorted = [...rows.values()].sort(([am, ap], [bm, bp]) => (ap === bp ? am.localeCompare(bm) : ap < bp ? -1 : 1));
  return ["| Method | Path | GitHub operation |", "|---|---|---|", ...sorted.map((cells) => `| ${cells.join(" | ")} |`)].join("\n");
}
