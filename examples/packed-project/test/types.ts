// Compiled, never run: the shipped declarations refuse what GitHub would not send. Each
// `@ts-expect-error` line must fail to type-check (tsc reports an unused one), so `npm run
// typecheck` fails if a misspelt claim or a wrong fault ever compiles against the installed package.
import type { FaultSpec, JobClaims, Sandbox, TokenResponse } from "tokensmith/testing";

export function claimsOf(sandbox: Sandbox): Promise<string>[] {
  const tag: JobClaims = { ref: "refs/tags/v1.2.0", ref_type: "tag", event_name: "push", custom: { deployment_tier: "gold" } };
  // @ts-expect-error -- GitHub's claim is `event_name`
  const misspelt: JobClaims = { event: "push" };
  // @ts-expect-error -- GitHub's `ref_protected` is the string "true" or "false"
  const boolean: JobClaims = { ref_protected: true };
  return [sandbox.mintJobToken(tag), sandbox.mintJobToken(misspelt), sandbox.mintJobToken(boolean)];
}

export const refused: FaultSpec = { method: "POST", path: /\/access_tokens$/, times: 1, respond: { status: 403, body: { message: "Forbidden" } } };
// @ts-expect-error -- `respond` is an answer or one of the named misbehaviours
export const unknownFault: FaultSpec = { path: "/app", respond: "timeout" };

export const expiresAt = (answer: TokenResponse): string => answer.expires_at;
