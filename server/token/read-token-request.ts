import { BrokerError } from "../../shared/broker-error.js";
import { parseRepositoryNames } from "../../shared/repository-names.js";
import { parseRequestedPermissions } from "../../shared/requested-permissions.js";
import type { TokenRequest } from "../../shared/types.js";
import { own } from "../http/fields.js";

/**
 * Body of POST /token (docs/api.md#post-token). `oidcToken`, `owner`, `repo` absent or empty →
 * missing_required_fields; present with the wrong type → invalid_request. `ref`, `runId`, `sha`
 * are for the log only and never authorise anything. `permissions` (optional) narrows the token:
 * present but malformed → 400 invalid_permissions, the body's detail naming the entry at fault.
 * `repositories` (optional) names other repositories of the owner the token should also cover:
 * present but malformed → 400 invalid_repositories, the detail naming the entry at fault. The
 * caller's own name there is dropped; a list of only it is as if absent.
 */
export function readTokenRequest(body: Record<string, unknown>): TokenRequest {
  const required = ["oidcToken", "owner", "repo"] as const;
  for (const field of required) {
    const value = own(body, field);
    if (value === undefined || value === null || value === "") throw new BrokerError("missing_required_fields", { detail: field });
    if (typeof value !== "string") throw new BrokerError("invalid_request", { detail: `${field} is not a string` });
  }
  for (const field of ["ref", "runId", "sha"] as const) {
    const value = own(body, field);
    if (value !== undefined && value !== null && typeof value !== "string") {
      throw new BrokerError("invalid_request", { detail: `${field} is not a string` });
    }
  }
  const permissions = readPermissions(own(body, "permissions"));
  const optional = (field: string) => {
    const value = own(body, field);
    return typeof value === "string" ? value.slice(0, 256) : undefined;
  };
  const owner = (own(body, "owner") as string).trim();
  const repo = (own(body, "repo") as string).trim();
  const repositories = readRepositories(own(body, "repositories"), owner, repo);
  return {
    oidcToken: own(body, "oidcToken") as string,
    owner,
    repo,
    ref: optional("ref"),
    runId: optional("runId"),
    sha: optional("sha"),
    ...(permissions ? { permissions } : {}),
    ...(repositories && repositories.length > 0 ? { repositories } : {}),
  };
}

// JSON null reads as absent, as for the optional string fields above.
function readRepositories(value: unknown, owner: string, repo: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const parsed = parseRepositoryNames(value, { owner, repo });
  if (!parsed.ok) throw new BrokerError("invalid_repositories", { detail: parsed.problem, answerDetail: parsed.problem });
  return parsed.names;
}

// JSON null reads as absent, as for the optional string fields above.
function readPermissions(value: unknown): TokenRequest["permissions"] {
  if (value === undefined || value === null) return undefined;
  const parsed = parseRequestedPermissions(value);
  if (!parsed.ok) throw new BrokerError("invalid_permissions", { detail: parsed.problem, answerDetail: parsed.problem });
  return parsed.permissions;
}
