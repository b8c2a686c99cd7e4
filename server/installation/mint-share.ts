import { BrokerError } from "../../shared/broker-error.js";
import { asTenant, type UpstreamGate } from "../github/upstream-gate.js";
import type { MintTarget } from "./repository-installation.js";

/** What taking a share needs of the broker's context (docs/design.md#layers). */
export interface MintShareDeps {
  gateFor(apiBase: string): UpstreamGate;
}

/**
 * Runs a /token request's platform work — installation lookup, policy reads, mint — as its
 * tenant's (the claims' owner and repository ids), decided before any of it starts
 * (docs/security.md#fair-shares-of-the-apps-budget): the App's calls queue fairly by owner, then
 * by repository, each held to its share while others wait. A repository (or owner) whose share is
 * spent and whose queue is full is refused at once: 429 installation_tokens_limited with
 * Retry-After, nothing asked of the platform. Without the claims' ids (/sign), `run` as it is.
 */
export async function withMintShare<T>(deps: MintShareDeps, target: MintTarget, run: () => Promise<T>): Promise<T> {
  if (!target.ids) return run();
  const tenant = { owner: String(target.ids.ownerId), repository: String(target.ids.repositoryId) };
  const admitted = deps.gateFor(target.platform.apiBase).admit(`app:${target.app.appId}`, tenant);
  if ("retryAfterMs" in admitted) {
    throw new BrokerError("installation_tokens_limited", { detail: `repository ${tenant.repository} of owner ${tenant.owner}`, retryAfter: Math.ceil(admitted.retryAfterMs / 1000) });
  }
  try {
    return await asTenant(tenant, run);
  } finally {
    admitted.done();
  }
}
