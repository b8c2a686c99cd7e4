// What /token asks the platform's mint for: the grant of grant-permissions.ts over the ceilings
// the API names (TOKEN_PERMISSIONS, each trust-policy rule that applies, the installation),
// narrowed by the step's own request.
import { BrokerError } from "../../shared/broker-error.js";
import type { Permissions } from "../../shared/token-permissions.js";
import { describeWithheld, grantPermissions, type PermissionCeiling } from "./grant-permissions.js";

/** The ceilings' names as the denial's detail shows them (docs/design.md#decisions-where-the-contract-was-open: TOKEN_PERMISSIONS, the installation, or the rule). */
export const CEILING_TOKEN_PERMISSIONS = "TOKEN_PERMISSIONS";
const CEILING_INSTALLATION = "installation";

/**
 * The permissions to mint with. A request beyond the grant → 403 permissions_not_granted whose
 * detail names each permission and what withheld it (the caller's own request against the
 * broker's setting, the policy rule that holds and the App's installation: nothing the caller
 * could not learn by asking; the rule's name is already in the job's own policy file).
 * An empty grant asks for `metadata: read`, which every installation holds: a mint with no
 * permissions would mean "every permission the installation has".
 */
export function permissionsToMint(input: {
  tokenPermissions: Permissions;
  /** The trust policy's rules that hold (`rule <name>`, `owner rule <name>`; server/policy/decide-policy.ts); none without a policy. */
  policyCeilings?: readonly PermissionCeiling[];
  installation: Readonly<Record<string, string>>;
  requested?: Permissions;
}): Permissions {
  const ceilings: PermissionCeiling[] = [
    { source: CEILING_TOKEN_PERMISSIONS, permissions: input.tokenPermissions },
    ...(input.policyCeilings ?? []),
    { source: CEILING_INSTALLATION, permissions: input.installation },
  ];
  const grant = grantPermissions({ ceilings, ...(input.requested ? { requested: input.requested } : {}) });
  if (!grant.ok) {
    const line = describeWithheld(grant.withheld);
    throw new BrokerError("permissions_not_granted", { detail: line, answerDetail: line });
  }
  return Object.keys(grant.permissions).length > 0 ? grant.permissions : { metadata: "read" };
}
