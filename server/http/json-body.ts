import type { IncomingMessage, ServerResponse } from "node:http";
import type { Request, RequestHandler, Response } from "express";
import { BrokerError } from "../../shared/broker-error.js";
import type { BodyBudget, BodyRules } from "./body-budget.js";
import { SERVER_BUSY_RETRY_AFTER_S } from "./limits.js";
import { closeAfterAnswer } from "./lingering-close.js";

export const KIB = 1024;
export const MIB = 1024 * KIB;

interface ReadOptions {
  /** The bytes received count against this budget while the body is held (bodies not yet authenticated). */
  budget?: BodyBudget;
  /** The body must have arrived by then (epoch ms on `now`), or it is refused with 408 request_timeout. */
  deadlineAt?: number;
  now?: () => number;
}

export interface HeldBody {
  bytes: Buffer;
  /** Gives back what the body took from the budget (idempotent). */
  release(): void;
}

/**
 * Reads a request body of at most `limit` bytes. A declared Content-Length over the limit is
 * refused before a byte is read, and a body that grows past it is refused as soon as it does:
 * nothing over the limit is ever buffered. Compressed bodies are refused (the limit would not
 * bound what they inflate to, and a webhook's signature covers the bytes as sent). With a budget,
 * the bytes are taken from it as they arrive, never the declared length ahead of them (see
 * body-budget.ts); a chunk that does not fit is refused with 503 server_busy. The budget is given
 * back when the body is refused or aborted, and by the caller (`release`) once it has consumed the bytes.
 */
export function readBody(req: IncomingMessage, limit: number, options: ReadOptions = {}): Promise<HeldBody> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > limit) return reject(new BrokerError("payload_too_large"));
    const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding !== "identity") return reject(new BrokerError("invalid_request", { detail: `content-encoding ${encoding}` }));
    const { budget } = options;
    let taken = 0;
    const release = () => {
      budget?.give(taken);
      taken = 0;
    };
    const busy = () => new BrokerError("server_busy", { retryAfter: SERVER_BUSY_RETRY_AFTER_S, detail: "unauthenticated body budget full" });
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (error: BrokerError) => {
      cleanup();
      release();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(new BrokerError("payload_too_large"));
      if (budget) {
        if (!budget.take(chunk.length)) return fail(busy());
        taken += chunk.length;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), release });
    };
    const onAbort = () => fail(new BrokerError("invalid_request", { detail: "request body aborted" }));
    const timer =
      options.deadlineAt === undefined
        ? undefined
        : setTimeout(() => fail(new BrokerError("request_timeout", { detail: `body not received in time (${size} bytes read)` })), Math.max(0, options.deadlineAt - (options.now ?? Date.now)()));
    const cleanup = () => {
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("aborted", onAbort);
      req.off("close", onAbort);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onAbort);
    req.on("aborted", onAbort);
    req.on("close", onAbort); // the connection died before the end: 'end' never comes
  });
}

/** Reads this request's body under its rules: the budget while nobody has authenticated the caller. */
function readFor(req: Request, res: Response, limit: number): Promise<HeldBody> {
  const rules = res.locals.bodyRules as BodyRules | undefined;
  if (!rules || res.locals.authenticated === true) return readBody(req, limit);
  return readBody(req, limit, { budget: rules.budget, deadlineAt: rules.readDeadlineAt, now: rules.now });
}

/** The raw bytes in `req.body` (for /webhook, whose signature covers the bytes exactly as sent). */
export function rawBody(limit: number): RequestHandler {
  return (req, res, next) => {
    readFor(req, res, limit).then(
      (held) => {
        req.body = held.bytes;
        // The next handler checks the signature synchronously: once it returns, the bytes are
        // authenticated or refused.
        try {
          next();
        } finally {
          held.release();
        }
      },
      (error: unknown) => next(refuse(req, res, error)),
    );
  };
}

/**
 * The body parsed as JSON whatever its content type (the API's clients always send JSON; a
 * missing header must not turn a good body into a confusing error); it must be a JSON object.
 */
export function jsonObjectBody(limit: number): RequestHandler {
  return (req, res, next) => {
    readFor(req, res, limit).then(
      (held) => {
        try {
          req.body = parseJsonObject(held.bytes);
        } catch (error) {
          return next(error);
        } finally {
          held.release(); // the raw bytes are not kept
        }
        next();
      },
      (error: unknown) => next(refuse(req, res, error)),
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

/**
 * After refusing a body part-way, the connection is closed once the answer is out (the rest of the
 * body is not read as a request), with a lingering close so that a client still sending reads it.
 * An aborted body has nobody to answer.
 */
function refuse(req: IncomingMessage, res: ServerResponse, error: unknown): unknown {
  if (!res.writableEnded && !res.destroyed) closeAfterAnswer(req, res);
  return error;
}
