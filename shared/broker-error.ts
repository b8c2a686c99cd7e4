import { ERROR_CODES, type ErrorCode, type OidcReason } from "./error-codes.js";
import type { ErrorBody } from "./types.js";

/**
 * The one error type of the broker: a status and a stable code from the table, plus the OIDC
 * `reason` where the spec wants one. The server's error handler turns it into the spec's body;
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
   * DESIGN.md "Error body": one human line sent as the body's `detail` (a policy denial names the
   * rule, the condition and the claim's value). Only for text that is the caller's own to see:
   * `detail` (the log's) stays out of the body.
   */
  readonly answerDetail?: string;

  constructor(code: ErrorCode, options: { reason?: OidcReason; status?: number; detail?: string; cause?: unknown; retryAfter?: number; answerDetail?: string } = {}) {
    super(options.detail ? `${code}: ${options.detail}` : code, { cause: options.cause });
    this.name = "BrokerError";
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    if (options.reason) this.reason = options.reason;
    if (options.retryAfter !== undefined) this.retryAfter = Math.max(0, Math.ceil(options.retryAfter));
    if (options.answerDetail !== undefined) this.answerDetail = options.answerDetail.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, 1000);
  }

  toBody(): ErrorBody {
    const body: ErrorBody = this.reason ? { error: this.code, reason: this.reason } : { error: this.code };
    return this.answerDetail === undefined ? body : { ...body, detail: this.answerDetail };
  }
}
