import type { ReleasesResponse } from "../../shared/types.js";
import { redactUrlCredentials } from "../../shared/redact-url.js";
import { explainError } from "./explain-error.js";
import { formatReleasesTable } from "./format-releases-table.js";

export interface CommandIo {
  env: Readonly<Record<string, string | undefined>>;
  fetch: typeof fetch;
  out(text: string): void;
  err(text: string): void;
  /** `tokensmith serve`: starts the broker in this process. */
  serve(): Promise<void>;
  /** The directory relative file names are read from (`policy`); the process's own when unset. */
  cwd?: string;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM): `tokensmith sandbox` waits on it. */
  stopped?(): Promise<unknown>;
}

interface ReleasesOptions {
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
    io.err(`tokensmith: --url is not a URL: ${redactUrlCredentials(options.url)}\n`);
    return 2;
  }
  if (endpoint.username !== "" || endpoint.password !== "") {
    io.err("tokensmith: --url must not carry a user or password: the secret is read from TOKENSMITH_SECRET.\n");
    return 2;
  }
  let status: number;
  let text: string;
  try {
    const response = await io.fetch(endpoint, {
      headers: { authorization: `Bearer ${secret}`, accept: "application/json" },
      // Never followed: a redirect would carry the bearer secret to wherever it points, and the
      // broker never sends one (the dashboard's fetch does the same).
      redirect: "manual",
      signal: AbortSignal.timeout(options.timeoutMs ?? 120_000),
    });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel();
      io.err(`tokensmith: ${describeRedirect(endpoint, response)}\n`);
      return 1;
    }
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

/** Where a redirect pointed (its origin only), said so that the user can decide to use it as --url. */
function describeRedirect(endpoint: URL, response: Response): string {
  const location = response.headers.get("location");
  let target = "nowhere (no Location)";
  if (location !== null) {
    try {
      const url = new URL(location, endpoint);
      target = url.origin === endpoint.origin ? `${url.pathname} on the same origin` : url.origin;
    } catch {
      target = "an unusable Location";
    }
  }
  return `the broker at ${endpoint.origin} answered a redirect (HTTP ${response.status}) to ${target}: not followed, so TOKENSMITH_SECRET was sent nowhere else. Give --url the broker's own address.`;
}

function isReleasesResponse(body: unknown): body is ReleasesResponse {
  const answer = body as Partial<ReleasesResponse> | undefined;
  return typeof answer === "object" && answer !== null && typeof answer.generated_at === "string" && Array.isArray(answer.repos);
}
