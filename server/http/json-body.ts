import express, { type RequestHandler } from "express";
import { BrokerError } from "../../shared/broker-error.js";

/**
 * Parses the body as JSON whatever its content type (the spec's clients always send JSON; a
 * missing header must not turn a good body into a confusing error), within `limit` bytes, and
 * insists on a JSON object. body-parser rejects on Content-Length before reading a byte, and stops
 * reading a chunked body once it passes the limit.
 */
export function jsonObjectBody(limit: string): RequestHandler[] {
  const parse = express.json({
    limit,
    strict: false,
    type: () => true,
    // body-parser turns an empty body into {}: remember how many bytes there really were.
    verify: (req, _res, buf) => {
      (req as { bodyBytes?: number }).bodyBytes = buf.length;
    },
  });
  return [
    (req, res, next) => {
      parse(req, res, (error?: unknown) => {
        if (error) return next(toBrokerError(error));
        next();
      });
    },
    (req, _res, next) => {
      const body: unknown = req.body;
      if (body === undefined || !(req as { bodyBytes?: number }).bodyBytes) return next(new BrokerError("invalid_json", { detail: "empty body" }));
      if (body === null || typeof body !== "object" || Array.isArray(body)) {
        return next(new BrokerError("invalid_request", { detail: "body is not a JSON object" }));
      }
      next();
    },
  ];
}

/** body-parser errors carry a `type`; branch on it, never on the message. */
export function toBrokerError(error: unknown): BrokerError {
  const type = (error as { type?: string } | null)?.type;
  switch (type) {
    case "entity.too.large":
      return new BrokerError("payload_too_large");
    case "entity.parse.failed":
      return new BrokerError("invalid_json");
    case "request.aborted":
    case "request.size.invalid":
    case "encoding.unsupported":
    case "charset.unsupported":
    case "stream.encoding.set":
      return new BrokerError("invalid_request", { detail: type });
    default:
      return new BrokerError("invalid_request", { detail: "unreadable body" });
  }
}
