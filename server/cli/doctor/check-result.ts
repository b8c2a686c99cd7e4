import { redactUrlCredentials } from "../../../shared/redact-url.js";

/** One line of `tokensmith doctor`: ok, FAIL, or warn (worth knowing, not a failure). Never a secret. */
export interface CheckResult {
  status: "ok" | "FAIL" | "warn";
  what: string;
}

export const ok = (what: string): CheckResult => ({ status: "ok", what });
export const fail = (what: string): CheckResult => ({ status: "FAIL", what });
export const warn = (what: string): CheckResult => ({ status: "warn", what });

/** The printed line; a URL's credentials never reach it, whichever check (or error message) put the URL there. */
export function formatCheck(result: CheckResult): string {
  return `${result.status.padEnd(4)} ${redactUrlCredentials(result.what)}\n`;
}

/** Why a call failed, in a few words: a status and the platform's message, or the network error's code. */
export function whyFailed(error: unknown): string {
  const status = (error as { status?: unknown }).status;
  const response = (error as { response?: { data?: { message?: unknown } } }).response;
  if (typeof status === "number" && response) {
    const message = response.data?.message;
    return `HTTP ${status}${typeof message === "string" ? ` ${message.slice(0, 100)}` : ""}`;
  }
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && cause; depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string") return code;
    cause = (cause as { cause?: unknown }).cause;
  }
  return error instanceof Error ? error.message.slice(0, 120) : "failed";
}
