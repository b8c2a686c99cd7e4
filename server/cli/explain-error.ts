import { ERROR_CODES, isErrorCode } from "../../shared/error-codes.js";

/** What a dashboard user can do about codes whose generic hint is written for HTTP callers. */
const CLI_HINTS: Partial<Record<keyof typeof ERROR_CODES, string>> = {
  unauthorized: "TOKENSMITH_SECRET must be the broker's PROCESS_TRIGGER_SECRET.",
};

/** A broker error code as plain sentences (the shared table's meaning and hint), naming the code. */
export function explainError(status: number, body: unknown): string {
  const code = (body as { error?: unknown } | null)?.error;
  if (!isErrorCode(code)) return `The broker answered HTTP ${status}, which is not a tokensmith answer. Check --url.`;
  const info = ERROR_CODES[code];
  return `${info.meaning} ${CLI_HINTS[code] ?? info.hint} (HTTP ${status} ${code})`;
}
