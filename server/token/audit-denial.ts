import type { Response } from "express";
import type { BrokerError } from "../../shared/broker-error.js";
import type { Logger } from "../log.js";

/** What /token knows of the caller once its OIDC token verified (set by the route, read here). */
interface VerifiedCaller {
  repository: string | undefined;
  rule: string | undefined;
  issuer: string;
  sub: string | undefined;
}

/**
 * The /token refusals after OIDC verification, audited like mints (docs/operations.md#running-it):
 * whoever was refused, and why. policy_denied is audited where the policy decides (apply-policies.ts).
 */
const AUDITED = new Set(["repo_mismatch", "repo_not_allowed", "app_not_installed", "permissions_not_granted", "oidc_token_replayed"]);

export function rememberVerifiedCaller(res: Response, caller: VerifiedCaller): void {
  res.locals.verifiedCaller = caller;
}

/** One `token_denied` audit line for an audited refusal of a verified caller; never a token or JWT. */
export function auditDenial(log: Logger, error: BrokerError, res: Response): void {
  const caller = res.locals.verifiedCaller as VerifiedCaller | undefined;
  if (!caller || !AUDITED.has(error.code)) return;
  log.info(
    { audit: "token_denied", code: error.code, repository: caller.repository, rule: caller.rule, issuer: caller.issuer, sub: caller.sub, detail: error.message, request_id: res.locals.requestId },
    "token denied",
  );
}
