import { randomUUID } from "node:crypto";
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "../log.js";
import { routeLabel, type Metrics } from "../metrics.js";
import { startRequestSpan } from "../tracing.js";

/**
 * An incoming `X-Request-Id` the broker can carry as it is (a load balancer's or the caller's, so
 * one id follows a request across systems); anything else could forge or break log lines.
 */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The caller's request id when it is a safe one, else a fresh UUID. */
function requestIdOf(req: Request): string {
  const incoming = req.headers["x-request-id"];
  return typeof incoming === "string" && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Logged as the status of a request whose caller went away before its answer was sent (nginx's 499). */
const ABANDONED_STATUS = 499;

interface RequestLogOptions {
  log: Logger;
  now: () => number;
  /** Every request is answered within this (REQUEST_DEADLINE_MS): `res.locals.deadlineAt` is now + this. */
  deadlineMs: number;
  /** Answers a request still unanswered at its deadline (the app's error handler with 503 deadline_exceeded). */
  onDeadline: (req: Request, res: Response) => void;
  /** Counts and times each request (the admin listener's /metrics). */
  metrics?: Metrics;
}

/**
 * Runs first on every route. One structured line per request, exactly once: route, status, code,
 * duration, request id, never a body; written when the answer is sent, or when the connection
 * closes before it was (status 499). Sets `res.locals.deadlineAt` (epoch ms on `now`): platform
 * calls do not start what cannot finish before it, and a request still unanswered then is
 * answered by `onDeadline`.
 */
export function requestLog(options: RequestLogOptions): RequestHandler {
  const { log, now, deadlineMs, onDeadline, metrics } = options;
  return (req, res, next) => {
    const started = now();
    const requestId = requestIdOf(req);
    res.locals.requestId = requestId;
    res.locals.deadlineAt = started + deadlineMs;
    res.setHeader("X-Request-Id", requestId);
    // A route's span is named by its bounded label (one of the four routes, or `other`).
    const span = startRequestSpan(req.method, routeLabel(req.path), requestId);
    let logged = false;
    const write = (status: number) => {
      if (logged) return;
      logged = true;
      clearTimeout(deadline);
      metrics?.observeRequest({ path: req.path, status, code: res.locals.errorCode as string | undefined, seconds: (now() - started) / 1000 });
      span?.end(status, res.locals.errorCode as string | undefined);
      log.info(
        {
          request_id: requestId,
          method: req.method,
          route: req.path.length > 100 ? `${req.path.slice(0, 100)}…` : req.path,
          status,
          code: res.locals.errorCode,
          duration_ms: now() - started,
        },
        "request",
      );
    };
    const deadline = setTimeout(() => {
      if (res.headersSent || res.writableEnded || res.destroyed) return;
      log.warn({ request_id: requestId, route: req.path, deadline_ms: deadlineMs }, "request deadline passed: answered 503 deadline_exceeded");
      onDeadline(req, res);
    }, deadlineMs);
    res.on("finish", () => write(res.statusCode));
    // 'close' without 'finish': the caller (or the network) went away before the whole answer was sent.
    res.on("close", () => write(res.writableFinished ? res.statusCode : ABANDONED_STATUS));
    if (span) span.run(next);
    else next();
  };
}
