import type { ServerResponse } from "node:http";

/** Every JSON answer of every route, written straight to the response (Express's res.json does more than a broker needs). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  // Late work after the request's deadline answer (or after the caller left) has nobody to answer.
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  sendJsonText(res, status, JSON.stringify(body));
}

/** `sendJson` for a body already serialised (exactly what JSON.stringify would have written). */
export function sendJsonText(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}
