// The part of @actions/core the action uses, as an interface: the entry points pass the real
// module, tests pass a recording toolkit (STYLE.md: injected toolkit, as in
// actions/create-github-app-token and actions/typescript-action).
import type { HttpClient } from "@actions/http-client";

export interface Toolkit {
  getInput(name: string): string;
  /** Adds a `::add-mask::` line: the runner replaces the value with *** in every later log line. */
  setSecret(secret: string): void;
  setOutput(name: string, value: string): void;
  saveState(name: string, value: string): void;
  getState(name: string): string;
  /** GETs ACTIONS_ID_TOKEN_REQUEST_URL&audience=…; masks the JWT it returns. */
  getIDToken(audience?: string): Promise<string>;
  info(message: string): void;
  warning(message: string): void;
  debug(message: string): void;
  setFailed(message: string): void;
}

/** What the action reads from the job's environment (the runner's default variables). */
export type Env = Record<string, string | undefined>;

/** Every HTTP call of the action goes through @actions/http-client (it honours https_proxy / no_proxy). */
export type Http = Pick<HttpClient, "request">;

export interface RetryPolicy {
  /** Rounds through the broker's addresses, the first included. */
  attempts: number;
  /** Wait before the second round; doubled for each later one. */
  baseDelayMs: number;
}

/** Names shared by main (which saves them) and post (which reads them). */
export const STATE = { token: "token", expiresAt: "expires-at" } as const;
