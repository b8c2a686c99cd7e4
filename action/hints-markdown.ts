// The action's hints as Markdown tables for docs/action.md (test/hardening-action-docs.test.ts
// holds the document to them). Not imported by main: the bundle does not carry it.
import { ERROR_CODES, OIDC_REASONS, type ErrorCode, type OidcReason } from "../shared/error-codes.js";
import { REASON_HINTS, WORKFLOW_HINTS } from "./hints.js";

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("{repository}", "*owner/name*").replaceAll("{audience}", "*audience*");

export function workflowHintsMarkdown(): string {
  const rows = (Object.keys(ERROR_CODES) as ErrorCode[])
    .sort((a, b) => ERROR_CODES[a].status - ERROR_CODES[b].status || a.localeCompare(b))
    .map((code) => `| ${ERROR_CODES[code].status} | \`${code}\` | ${retried(code)} | ${cell(WORKFLOW_HINTS[code])} |`);
  return ["| Status | error | Retried | What the step says |", "|---|---|---|---|", ...rows].join("\n");
}

/** request-token.ts's rule: the table's retryable flag; a 5xx also needs the broker's Retry-After (oidc_key_fetch_failed always). */
function retried(code: ErrorCode): string {
  const { retryable, status } = ERROR_CODES[code];
  if (!retryable) return "no";
  return status < 500 || code === "oidc_key_fetch_failed" ? "yes" : "with `Retry-After`";
}

export function reasonHintsMarkdown(): string {
  const rows = (Object.keys(OIDC_REASONS) as OidcReason[]).map((reason) => `| \`${reason}\` | ${cell(REASON_HINTS[reason])} |`);
  return ["| reason | What the step says |", "|---|---|", ...rows].join("\n");
}
