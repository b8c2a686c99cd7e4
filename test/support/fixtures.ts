// Shared set-up for /token tests: one simulated platform with an App installed on octo-org/app.
import { createSimulator, type Simulator } from "./simulator/index.js";

export interface TokenFixture {
  sim: Simulator;
  app: { id: number; privateKeyPem: string };
  installationId: number;
  env: Record<string, string | undefined>;
}

export const INSTALLED_PERMISSIONS = { contents: "write", pull_requests: "write", issues: "read", metadata: "read" } as const;

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
  };
  return { sim, app, installationId, env };
}

/** Every credential a test handled must be absent from every log line. */
export function expectNoSecrets(logs: readonly string[], secrets: ReadonlyArray<string | undefined>): void {
  const needles = secrets.filter((s): s is string => typeof s === "string" && s.length >= 8);
  for (const line of logs) {
    for (const needle of needles) {
      if (line.includes(needle)) throw new Error(`a secret appeared in a log line: ${line.slice(0, 120)}…`);
    }
    if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(line)) throw new Error("a private key appeared in a log line");
    if (/eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+/.test(line)) throw new Error("a JWT appeared in a log line");
    if (/gh[sp]_[A-Za-z0-9]{20,}/.test(line)) throw new Error("a platform token appeared in a log line");
  }
}
