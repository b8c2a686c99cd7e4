import { ERROR_CODES, isErrorCode, type ErrorCode } from "../../shared/error-codes.js";

/** The dashboard's own codes, for failures that never produced a broker answer. */
export type DashboardErrorCode = "broker_unreachable" | "broker_timeout" | "broker_unrecognised";

/** What the page receives instead of the aggregate: a stable code and a sentence to show as is. */
export interface DashboardErrorBody {
  error: ErrorCode | DashboardErrorCode;
  sentence: string;
}

/** What a dashboard operator can do about codes whose shared hint is written for HTTP or action callers. */
const DASHBOARD_HINTS: Partial<Record<ErrorCode, string>> = {
  unauthorized: "TOKENSMITH_SECRET must be the broker's PROCESS_TRIGGER_SECRET.",
  not_found: "Check --broker: it must be the broker's origin, without a path.",
  method_not_allowed: "Check --broker: it must be the broker's origin, without a path.",
};

/** A broker's error answer as the shared table's meaning and hint; anything else as a non-tokensmith answer. */
export function explainBrokerAnswer(status: number, body: unknown): { status: number; body: DashboardErrorBody } {
  const code = (body as { error?: unknown } | null | undefined)?.error;
  if (isErrorCode(code)) {
    const info = ERROR_CODES[code];
    return { status, body: { error: code, sentence: `${info.meaning} ${DASHBOARD_HINTS[code] ?? info.hint}` } };
  }
  return {
    status: 502,
    body: {
      error: "broker_unrecognised",
      sentence: `The broker answered HTTP ${status}, which is not a tokensmith answer. Check --broker: it must be the broker's origin, without a path.`,
    },
  };
}

/** The broker could not be asked at all: refused, unresolvable, reset, or too slow. */
export function explainUnreachable(origin: string, error: unknown, timeoutMs: number): { status: number; body: DashboardErrorBody } {
  // By name, not instanceof: the abort's DOMException may come from another realm.
  if ((error as { name?: unknown } | null)?.name === "TimeoutError") {
    return {
      status: 504,
      body: { error: "broker_timeout", sentence: `The broker at ${origin} did not answer within ${Number((timeoutMs / 1000).toFixed(1))} s. A large fleet's first crawl takes a while; refresh in a moment.` },
    };
  }
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  const why = typeof cause?.code === "string" ? ` (${cause.code})` : "";
  return {
    status: 502,
    body: { error: "broker_unreachable", sentence: `The dashboard could not reach the broker at ${origin}${why}. Check --broker and that the broker is running.` },
  };
}
