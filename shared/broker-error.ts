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

  constructor(code: ErrorCode, options: { reason?: OidcReason; status?: number; detail?: string; cause?: unknown } = {}) {
    super(options.detail ? `${code}: ${options.detail}` : code, { cause: options.cause });
    this.name = "BrokerError";
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    if (options.reason) this.reason = options.reason;
  }

  toBody(): ErrorBody {
    return this.reason ? { error: this.code, reason: this.reason } : { error: this.code };
  }
}
