import type { ReleasesResponse } from "../../shared/types.js";
import { explainError } from "./explain-error.js";
import { formatReleasesTable } from "./format-releases-table.js";

export interface CommandIo {
  env: Readonly<Record<string, string | undefined>>;
  fetch: typeof fetch;
  out(text: string): void;
  err(text: string): void;
  /** `tokensmith serve`: starts the broker in this process. */
  serve(): Promise<void>;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM): `tokensmith sandbox` waits on it. */
  stopped?(): Promise<unknown>;
}

export interface ReleasesOptions {
  url: string;
  json: boolean;
  /** A crawl of a large fleet takes a while; a cached answer is instant. */
  timeoutMs?: number;
}

/** `tokensmith releases --url URL [--json]`: 0 on success, 1 when the broker said no or could not be reached. */
export async function releasesCommand(options: ReleasesOptions, io: CommandIo): Promise<number> {
  const secret = io.env.TOKENSMITH_SECRET;
  if (!secret) {
    io.err("tokensmith: set TOKENSMITH_SECRET to the broker's PROCESS_TRIGGER_SECRET.\n");
    return 2;
  }
  let endpoint: URL;
  try {
    endpoint = new URL("releases", options.url.endsWith("/") ? options.url : `${options.url}/`);
  } catch {
    io.err(`tokensmith: --url is not a URL: ${options.url}\n`);
    return 2;
  }
  let status: number;
  let text: string;
  try {
    const response = await io.fetch(endpoint, {
      headers: { authorization: `Bearer ${secret}`, accept: "application/json" },
      signal: AbortSignal.timeout(options.timeoutMs ?? 120_000),
    });
    status = response.status;
    text = await response.text();
  } catch (error) {
    const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
    const why = typeof cause?.code === "string" ? cause.code : typeof cause?.message === "string" ? cause.message : error instanceof Error ? error.name : "error";
    io.err(`tokensmith: could not reach the broker at ${endpoint.origin} (${why}).\n`);
    return 1;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (status !== 200 || !isReleasesResponse(body)) {
    io.err(`tokensmith: ${explainError(status, body)}\n`);
    return 1;
  }
  io.out(options.json ? `${text.trimEnd()}\n` : formatReleasesTable(body));
  return 0;
}

function isReleasesResponse(body: unknown): body is ReleasesResponse {
  const answer = body as Partial<ReleasesResponse> | undefined;
  return typeof answer === "object" && answer !== null && typeof answer.generated_at === "string" && Array.isArray(answer.repos);
}
