// Shared set-up for /token tests: one simulated platform with an App installed on octo-org/app.
import { findSecret } from "./log-scan.js";
import { createSimulator, type Simulator } from "../../simulator/index.js";

export interface TokenFixture {
  sim: Simulator;
  app: { id: number; privateKeyPem: string };
  installationId: number;
  env: Record<string, string | undefined>;
}

export const INSTALLED_PERMISSIONS = { contents: "write", pull_requests: "write", issues: "read", metadata: "read" } as const;

/**
 * Builds GitHub's GraphQL schema now, which the simulator otherwise does on its first GraphQL
 * request (docs/development.md#test-time): for files whose first /sign or /releases request runs
 * under a short timeout, in the same process as the simulator.
 */
export async function prepareGraphql(): Promise<void> {
  const { implementedSchema, platformSchema } = await import("../../simulator/graphql-schema.js");
  platformSchema();
  implementedSchema();
}

export async function tokenFixture(options: { keyFormat?: "pkcs1" | "pkcs8" } = {}): Promise<TokenFixture> {
  const sim = await createSimulator();
  const app = sim.createApp({ keyFormat: options.keyFormat ?? "pkcs1" });
  const installationId = sim.addInstallation({
    appId: app.id,
    account: "octo-org",
    permissions: { ...INSTALLED_PERMISSIONS },
    repositories: ["app", "other"],
  });
  const env = {
    HOST_APP_ID: String(app.id),
    HOST_APP_PRIVATE_KEY: app.privateKeyPem,
    HOST_API_BASE: sim.apiBase,
    HOST_OIDC_ISSUER: sim.oidc.issuer,
    // The API's /token, request for request: trust policies (read by default) have their own
    // tests (test/policy-*.test.ts), which set TOKEN_POLICY themselves.
    TOKEN_POLICY: "off",
  };
  return { sim, app, installationId, env };
}

/** Every credential a test handled must be absent from every log line; so must anything that looks like one. */
export function expectNoSecrets(logs: readonly string[], secrets: ReadonlyArray<string | undefined>): void {
  const known = secrets.filter((s): s is string => typeof s === "string");
  for (const line of logs) {
    const found = findSecret(line, known);
    if (found) throw new Error(`${found} appeared in a log line: ${line.slice(0, 120)}…`);
  }
}
