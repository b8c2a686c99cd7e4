// Shared set-up for /releases tests: a simulated platform with one App (a random id, so entries in
// the shared Redis never collide between runs) and helpers to install it on a fleet.
import { randomInt } from "node:crypto";
import { createSimulator, type PermissionLevel, type Simulator } from "../../simulator/index.js";
import { prepareGraphql } from "./fixtures.js";

export const TRIGGER_SECRET = "releases-test-secret-0123456789-0123";

export interface ReleasesFixture {
  sim: Simulator;
  app: { id: number; privateKeyPem: string };
  env: Record<string, string | undefined>;
  /**
   * Installs the App on `account` with these repositories; returns the installation id. `all`: on
   * every repository of the account (these being all it has), whose mint answer lists none, so the
   * crawl walks the listing; otherwise on these selected ones, which the mint answer lists.
   */
  install(account: string, repositories: string[], permissions?: Record<string, PermissionLevel>, selection?: "selected" | "all"): number;
}

export const READ_WRITE = { contents: "write", metadata: "read", pull_requests: "write" } as const;

export async function releasesFixture(options: { latencyMs?: number } = {}): Promise<ReleasesFixture> {
  await prepareGraphql(); // every /releases crawl asks GraphQL for the latest releases
  const sim = await createSimulator({ latencyMs: options.latencyMs });
  const app = sim.createApp({ id: randomInt(2_000_000, 900_000_000) });
  const env = {
    HOST_APP_ID: String(app.id),
    HOST_APP_PRIVATE_KEY: app.privateKeyPem,
    HOST_API_BASE: sim.apiBase,
    PROCESS_TRIGGER_SECRET: TRIGGER_SECRET,
    // As in fixtures.ts: trust policies are their own tests' subject (test/policy-*.test.ts); with
    // them on, a /token also reads policy files with the installation's token.
    TOKEN_POLICY: "off",
  };
  return {
    sim,
    app,
    env,
    install: (account, repositories, permissions = { ...READ_WRITE }, selection = "selected") => {
      if (selection === "selected") return sim.addInstallation({ appId: app.id, account, permissions, repositories });
      for (const name of repositories) sim.repository(account, name);
      return sim.addInstallation({ appId: app.id, account, permissions, repositories: "all" });
    },
  };
}

/** `prefix-000`, `prefix-001`, … */
export function names(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(3, "0")}`);
}

/** GET {url}/releases with the bearer (or the given Authorization header, or none with null). */
export async function getReleases(url: string, authorization: string | null = `Bearer ${TRIGGER_SECRET}`, method = "GET") {
  const response = await fetch(`${url}/releases`, { method, headers: authorization === null ? {} : { authorization } });
  const text = await response.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}
