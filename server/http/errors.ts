import type { ErrorRequestHandler, RequestHandler } from "express";
import { BrokerError } from "../../shared/broker-error.js";
import type { Logger } from "../log.js";
import { auditDenial } from "../token/audit-denial.js";
import { sendJson } from "./send-json.js";

/** The one place where errors become the API's JSON bodies. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    if (res.headersSent || res.writableEnded || res.destroyed) {
      // Late work: the request was already answered (its deadline passed) or abandoned. Nothing
      // more can be sent; the outcome goes to the log.
      const code = error instanceof BrokerError ? error.code : "internal_error";
      log.warn({ code, err: error instanceof BrokerError ? undefined : error, route: req.path, request_id: res.locals.requestId }, "work ended after its request was answered or abandoned");
      return;
    }
    const brokerError = error instanceof BrokerError ? error : null;
    if (!brokerError) {
      // Unknown failure: the detail goes to the log, never to the caller.
      log.error({ err: error, route: req.path, request_id: res.locals.requestId }, "unhandled error");
    } else if (brokerError.status >= 500) {
      log.warn({ code: brokerError.code, detail: brokerError.message, route: req.path, request_id: res.locals.requestId }, "upstream or configuration failure");
    }
    if (brokerError) auditDenial(log, brokerError, res);
    const answer = brokerError ?? new BrokerError("internal_error");
    res.locals.errorCode = answer.code;
    if (answer.retryAfter !== undefined) res.setHeader("Retry-After", String(answer.retryAfter));
    sendJson(res, answer.status, answer.toBody());
  };
}

export const notFound: RequestHandler = (_req, _res, next) => next(new BrokerError("not_found"));

/** Exactly one method per route: anything else, HEAD and OPTIONS included, is 405 with Allow. */
export function onlyMethod(method: string): RequestHandler {
  return (req, res, next) => {
    if (req.method === method) return next();
    res.setHeader("Allow", method);
    next(new BrokerError("method_not_allowed"));
  };
}
