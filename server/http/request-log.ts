import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";
import type { Logger } from "../log.js";

/** One structured line per request: route, status, code, duration, request id. Never a body. */
export function requestLog(log: Logger, now: () => number): RequestHandler {
  return (req, res, next) => {
    const started = now();
    const requestId = randomUUID();
    res.locals.requestId = requestId;
    res.setHeader("X-Request-Id", requestId);
    res.on("finish", () => {
      log.info(
        {
          request_id: requestId,
          method: req.method,
          route: req.path.length > 100 ? `${req.path.slice(0, 100)}…` : req.path,
          status: res.statusCode,
          code: res.locals.errorCode,
          duration_ms: now() - started,
        },
        "request",
      );
    });
    next();
  };
}
