import { ERROR_CODES, type ErrorCode, type OidcReason } from "./error-codes.js";
import type { ErrorBody } from "./types.js";

/**
 * The one error type of the broker: a status and a stable code from the table, plus the OIDC
 * `reason` where the API wants one. The server's error handler turns it into the API's body;
 * the action rebuilds it from a response. Never carries upstream text into a response body.
 */
export class BrokerError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly reason?: OidcReason;
  /**
   * Seconds after which the same request may succeed: sent as `Retry-After`. Set only on answers
   * worth retrying (a transient upstream failure, no key-set verdict, a busy broker); its absence
   * tells a client that retrying the same request will not help.
   */
  readonly retryAfter?: number;
  /**
   * The body's `detail` (docs/errors.md): one human line for the caller, set only where the
   * code's meaning promises one. Never a secret, a token or a JWT. The `detail` option, by contrast,
   * is for the broker's log only and never reaches a body (it may hold upstream statuses).
   */
  readonly answerDetail?: string;

  constructor(code: ErrorCode, options: { reason?: OidcReason; status?: number; detail?: string; answerDetail?: string; cause?: unknown; retryAfter?: number } = {}) {
    super(options.detail ? `${code}: ${options.detail}` : code, { cause: options.cause });
    this.name = "BrokerError";
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    if (options.reason) this.reason = options.reason;
    if (options.retryAfter !== undefined) this.retryAfter = Math.max(0, Math.ceil(options.retryAfter));
    if (options.answerDetail !== undefined) this.answerDetail = oneLine(options.answerDetail);
  }

  toBody(): ErrorBody {
    return {
      error: this.code,
      ...(this.reason ? { reason: this.reason } : {}),
      ...(this.answerDetail !== undefined ? { detail: this.answerDetail } : {}),
    };
  }
}

/** The most a body's `detail` carries: one line a person reads, not a document. */
export const MAX_DETAIL_LENGTH = 2000;

// Controls and line separators become spaces: a detail is one line wherever it is shown.
function oneLine(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ");
  return line.length > MAX_DETAIL_LENGTH ? `${line.slice(0, MAX_DETAIL_LENGTH - 1)}…` : line;
}
