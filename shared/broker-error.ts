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

  constructor(code: ErrorCode, options: { reason?: OidcReason; status?: number; detail?: string; cause?: unknown; retryAfter?: number } = {}) {
    super(options.detail ? `${code}: ${options.detail}` : code, { cause: options.cause });
    this.name = "BrokerError";
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    if (options.reason) this.reason = options.reason;
    if (options.retryAfter !== undefined) this.retryAfter = Math.max(0, Math.ceil(options.retryAfter));
  }

  toBody(): ErrorBody {
    return this.reason ? { error: this.code, reason: this.reason } : { error: this.code };
  }
}
