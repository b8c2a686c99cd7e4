import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { ErrorRequestHandler, Express, NextFunction, Request, RequestHandler, Response } from "express";

interface DirectRoute {
  /** The exact request target, e.g. "/token" (no query string: anything else goes to Express). */
  path: string;
  /** The route's whole chain, request log first, as it is also mounted in Express. */
  handlers: readonly RequestHandler[];
  /** The app's error handler. */
  onError: ErrorRequestHandler;
}

/**
 * The server's request listener: one route runs its own handler chain directly, everything else
 * goes to Express. Kept for speed, not correctness (issue 28; docs/operations.md, "Fast paths"):
 * Express's per-request set-up (swapping the prototypes of `req` and `res`, the router's layer
 * walk, a final handler per request) costs /token, the route every release job calls, 28 to 40 %
 * more CPU. Measured against Express alone (the same build with `listener = app`) under the
 * token scenario's load: CPU per request 0.66 ms direct vs 0.93 ms in Express on loopback (-28 %),
 * 1.01 vs 1.29 ms with the simulator behind a 40 ms / 100 Mbit link (-22 %). The handlers are the
 * same functions Express runs for that route (body budget and read timeout included), so the
 * answers are the same (test/routing.test.ts compares them); they read only Node's request and
 * response plus the two things Express would have added, `req.path` and `res.locals`.
 */
export function createRequestListener(app: Express, route: DirectRoute): RequestListener {
  return (req, res) => {
    if (req.url === route.path) runChain(req, res, route);
    else app(req, res);
  };
}

function runChain(incoming: IncomingMessage, outgoing: ServerResponse, route: DirectRoute): void {
  const req = Object.assign(incoming, { path: route.path }) as unknown as Request;
  const res = Object.assign(outgoing, { locals: Object.create(null) as Record<string, unknown> }) as unknown as Response;
  let index = 0;
  let failed = false;
  // Express's contract (router 2): next() runs the next handler, next(error) the error handler, and
  // a handler whose promise rejects has called next(error).
  const next: NextFunction = (error?: unknown) => {
    if (error) {
      if (failed) return void res.destroy(); // the error handler itself failed: as Express's final handler would
      failed = true;
      return call(() => route.onError(error, req, res, next));
    }
    const handler = route.handlers[index++];
    if (handler) call(() => handler(req, res, next));
  };
  const call = (run: () => unknown) => {
    try {
      const result = run() as Promise<unknown> | undefined;
      if (result && typeof result.then === "function") result.then(undefined, (error: unknown) => next(error || new Error("Rejected promise")));
    } catch (error) {
      next(error);
    }
  };
  next();
}
