// What each `if` key of a rule reads from the job's OIDC token. GitHub's claims:
// https://docs.github.com/actions/reference/security/oidc#oidc-token-claims
// Repository and owner names compare case-insensitively (as the platform treats them), every other
// claim exactly. A claim that is absent, or not a string, fails its condition.

/** A string claim of the job's token; anything else (absent, a number, an object) counts as absent. */
export function stringClaim(claims: Readonly<Record<string, unknown>>, name: string): string | undefined {
  const value = Object.hasOwn(claims, name) ? claims[name] : undefined;
  return typeof value === "string" ? value : undefined;
}

interface ConditionClaim {
  read(claims: Readonly<Record<string, unknown>>): string | undefined;
  caseInsensitive: boolean;
}

const claim = (name: string, caseInsensitive = false): ConditionClaim => ({ read: (claims) => stringClaim(claims, name), caseInsensitive });

export const CONDITION_CLAIMS: Readonly<Record<string, ConditionClaim>> = {
  ref: claim("ref"),
  ref_type: claim("ref_type"),
  event: claim("event_name"),
  workflow: { read: workflowPath, caseInsensitive: false },
  job_workflow_ref: claim("job_workflow_ref"),
  environment: claim("environment"),
  actor: claim("actor"),
  runner_environment: claim("runner_environment"),
  repository: claim("repository", true),
};

/**
 * `workflow`: the path of `workflow_ref` inside the job's own repository
 * (`octo-org/app/.github/workflows/release.yml@refs/heads/main` → `.github/workflows/release.yml`).
 * A workflow_ref naming another repository has no path here: absent.
 */
function workflowPath(claims: Readonly<Record<string, unknown>>): string | undefined {
  const ref = stringClaim(claims, "workflow_ref");
  const repository = stringClaim(claims, "repository");
  if (ref === undefined || repository === undefined) return undefined;
  const at = ref.lastIndexOf("@");
  const path = at === -1 ? ref : ref.slice(0, at);
  const prefix = `${repository}/`;
  return path.toLowerCase().startsWith(prefix.toLowerCase()) && path.length > prefix.length ? path.slice(prefix.length) : undefined;
}
