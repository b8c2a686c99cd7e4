import type { Logger } from "../log.js";
import { fingerprint } from "../log.js";
import type { PlatformClient } from "../github/platform-client.js";
import { statusOf } from "../github/platform-request.js";

/**
 * `DELETE /installation/token` with the token itself, for a token the broker will not hand out
 * (https://docs.github.com/rest/apps/installations#revoke-an-installation-access-token). Best
 * effort, never retried, never thrown: the token is logged by fingerprint only.
 */
export async function revokeInstallationToken(input: { client: PlatformClient; token: string; log: Logger; why: string; requestId?: string }): Promise<void> {
  const where = { token_sha256: fingerprint(input.token), why: input.why, request_id: input.requestId };
  try {
    await input.client({ method: "DELETE", path: "/installation/token", bearer: input.token });
    input.log.warn({ ...where, revoked: true }, "minted token revoked");
  } catch (error) {
    input.log.error({ ...where, revoked: false, status: statusOf(error) ?? "network" }, "could not revoke a minted token");
  }
}
