// Renders the error-code and reason tables for README.md from the data in error-codes.ts, so the
// documentation cannot drift from what the broker answers (a test compares them).
import { ERROR_CODES, OIDC_REASONS } from "./error-codes.js";

export function errorCodesMarkdown(): string {
  const rows = Object.entries(ERROR_CODES)
    .sort(([, a], [, b]) => a.status - b.status)
    .map(([code, info]) => `| ${info.status} | \`${code}\` | ${info.routes.map((r) => (r === "*" ? "any" : `\`${r}\``)).join(", ")} | ${info.meaning} | ${info.retryable ? "yes" : "no"} |`);
  return ["| Status | error | Routes | Meaning | Retry helps |", "|---|---|---|---|---|", ...rows].join("\n");
}

export function reasonsMarkdown(): string {
  const rows = Object.entries(OIDC_REASONS).map(([reason, info]) => `| \`${reason}\` | ${info.meaning} |`);
  return ["| reason | Meaning |", "|---|---|", ...rows].join("\n");
}

/** Replaces the text between `<!-- name:start -->` and `<!-- name:end -->`. */
export function replaceSection(document: string, name: string, content: string): string {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const from = document.indexOf(start);
  const to = document.indexOf(end);
  if (from < 0 || to < from) throw new Error(`README has no ${name} section`);
  return `${document.slice(0, from + start.length)}\n${content}\n${document.slice(to)}`;
}
