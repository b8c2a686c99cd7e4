// The part of @actions/core the action uses, as an interface: the entry points pass the real
// module, tests pass a recording toolkit (an injected toolkit, as in
// actions/create-github-app-token and actions/typescript-action).
import type { IncomingHttpHeaders } from "node:http";

export interface Toolkit {
  getInput(name: string): string;
  /** Adds a `::add-mask::` line: the runner replaces the value with *** in every later log line. */
  setSecret(secret: string): void;
  setOutput(name: string, value: string): void;
  saveState(name: string, value: string): void;
  getState(name: string): string;
  info(message: string): void;
  warning(message: string): void;
  debug(message: string): void;
  setFailed(message: string): void;
}

/** What the action reads from the job's environment (the runner's default variables). */
export type Env = Record<string, string | undefined>;

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Every HTTP call of the action goes through this (http.ts: bounded, honours https_proxy / no_proxy). */
export interface Http {
  /**
   * Rejects on a network error or when no complete answer came within the client's timeout (or
   * `limits.timeoutMs`, when shorter); with http.ts's IncompleteAnswer when the status line came
   * but the rest did not.
   */
  request(method: string, url: string, body: string | null, headers: Record<string, string>, limits?: { timeoutMs?: number }): Promise<HttpAnswer>;
}

export interface RetryPolicy {
  /** Rounds through the broker's addresses, the first included. */
  attempts: number;
  /** Wait before the second round; doubled for each later one. */
  baseDelayMs: number;
  /** The longest a `Retry-After` may make the action wait before its next round. */
  maxRetryAfterMs: number;
}

/** The step's one bound on its time (input `timeout-seconds`): every request and every wait ends by `at`. */
export interface Deadline {
  /** Epoch ms. */
  at: number;
  /** The input's value, for messages. */
  seconds: number;
  now: () => number;
}

/** Names shared by main (which saves them) and post (which reads them). */
export const STATE = { token: "token", expiresAt: "expires-at" } as const;
