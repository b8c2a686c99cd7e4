import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import { BrokerError } from "../../shared/broker-error.js";

export const KIB = 1024;
export const MIB = 1024 * KIB;

/**
 * Reads a request body of at most `limit` bytes. A declared Content-Length over the limit is
 * refused before a byte is read, and a body that grows past it is refused as soon as it does:
 * nothing over the limit is ever buffered. Compressed bodies are refused (the limit would not
 * bound what they inflate to, and a webhook's signature covers the bytes as sent).
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > limit) return reject(new BrokerError("payload_too_large"));
    const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding !== "identity") return reject(new BrokerError("invalid_request", { detail: `content-encoding ${encoding}` }));
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        reject(new BrokerError("payload_too_large"));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = () => {
      cleanup();
      reject(new BrokerError("invalid_request", { detail: "request body aborted" }));
    };
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onError);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onError);
  });
}

/** The raw bytes in `req.body` (for /webhook, whose signature covers the bytes exactly as sent). */
export function rawBody(limit: number): RequestHandler {
  return (req, res, next) => {
    readBody(req, limit).then(
      (bytes) => {
        req.body = bytes;
        next();
      },
      (error: unknown) => next(refuse(res, error)),
    );
  };
}

/**
 * The body parsed as JSON whatever its content type (the spec's clients always send JSON; a
 * missing header must not turn a good body into a confusing error); it must be a JSON object.
 */
export function jsonObjectBody(limit: number): RequestHandler {
  return (req, res, next) => {
    readBody(req, limit).then(
      (bytes) => {
        try {
          req.body = parseJsonObject(bytes);
        } catch (error) {
          return next(error);
        }
        next();
      },
      (error: unknown) => next(refuse(res, error)),
    );
  };
}

/** Bytes as a JSON object: 400 invalid_json when they are not JSON (or empty), invalid_request when not an object. */
export function parseJsonObject(bytes: Buffer): Record<string, unknown> {
  if (bytes.length === 0) throw new BrokerError("invalid_json", { detail: "empty body" });
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new BrokerError("invalid_json");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new BrokerError("invalid_request", { detail: "body is not a JSON object" });
  }
  return value as Record<string, unknown>;
}

/** After refusing a body part-way, close the connection rather than read the rest of it. */
function refuse(res: { setHeader(name: string, value: string): unknown }, error: unknown): unknown {
  res.setHeader("Connection", "close");
  return error;
}
