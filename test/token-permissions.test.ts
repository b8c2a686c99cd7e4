// TOKEN_PERMISSIONS over HTTP: forms, rejection, and the intersection with what the installation holds.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { APP_PERMISSIONS } from "../shared/app-permissions.js";
import { parseTokenPermissions } from "../shared/token-permissions.js";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { spawnBroker } from "./support/spawn-broker.js";

const secrets: string[] = [];

const t = brokerPerTest({ secrets });

async function exchangeWith(setting: string | undefined, oidcToken?: string) {
  t.broker.env.TOKEN_PERMISSIONS = setting;
  const token = oidcToken ?? (await t.fx.sim.oidc.sign());
  secrets.push(token);
  const res = await postJson(`${t.broker.url}/token`, { oidcToken: token, owner: "octo-org", repo: "app" });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

const mintedPermissions = (token: unknown) => t.fx.sim.tokens.get(token as string)?.permissions;
const askedFor = () => (t.fx.sim.requests.find((r) => r.path.endsWith("/access_tokens"))?.body as { permissions?: unknown })?.permissions;

describe("TOKEN_PERMISSIONS forms", () => {
  it.each([
    [undefined, { contents: "write", pull_requests: "write" }],
    ["", { contents: "write", pull_requests: "write" }],
    ["   ", { contents: "write", pull_requests: "write" }],
    ['{"contents":"read"}', { contents: "read" }],
    [' { "contents": "write", "pull_requests": "read" } ', { contents: "write", pull_requests: "read" }],
    ["contents=read", { contents: "read" }],
    ["contents:write, pull_requests=read", { contents: "write", pull_requests: "read" }],
    [" contents = read , , pull_requests : write ", { contents: "read", pull_requests: "write" }],
  ])("%j mints %j", async (setting, expected) => {
    const res = await exchangeWith(setting);
    expect(res.status).toBe(200);
    expect(askedFor()).toEqual(expected);
    expect(mintedPermissions(res.body.token)).toEqual(expected);
  });

  it.each([
    ["contents=admin"],
    ['{"contents":"admin"}'],
    ["contents=WRITE"],
    ["Contents=write"],
    ["contents-write"],
    ["contents"],
    [","],
    ["{}"],
    ["[]"],
    ['{"contents":'],
    ['{"contents":true}'],
    ["contents=read,contents=write"],
    // Not in the platform's catalogue, or a level the platform does not offer for the key.
    ["workflows=read"],
    ['{"profile":"read"}'],
    ["contents=write,pull_request=write"],
    ["constructor=read"],
    ["toString=read"],
  ])("%j → every request 400 invalid_token_permissions", async (setting) => {
    const res = await exchangeWith(setting);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_token_permissions" });
  });

  it("is checked before the OIDC token (a broken deployment says so to every caller)", async () => {
    const res = await exchangeWith("contents=admin", "not-a-jwt");
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_token_permissions" });
  });
});

describe("intersection with the installation's permissions", () => {
  it("drops a permission the installation lacks instead of failing", async () => {
    const res = await exchangeWith("contents=write,actions=write,packages=read");
    expect(res.status).toBe(200);
    expect(askedFor()).toEqual({ contents: "write" });
    expect(mintedPermissions(res.body.token)).toEqual({ contents: "write" });
  });

  it("downgrades write to read where only read was granted", async () => {
    const res = await exchangeWith("contents=write,issues=write");
    expect(res.status).toBe(200);
    expect(mintedPermissions(res.body.token)).toEqual({ contents: "write", issues: "read" });
  });

  it("asks for metadata:read when nothing requested is held, never for everything", async () => {
    const res = await exchangeWith("actions=write");
    expect(res.status).toBe(200);
    expect(askedFor()).toEqual({ metadata: "read" });
    expect(mintedPermissions(res.body.token)).toEqual({ metadata: "read" });
  });
});

describe("the platform's App permission catalogue (shared/app-permissions.ts)", () => {
  it("is what scripts/generate-app-permissions.js makes of the installed @octokit/openapi", () => {
    const regenerated = execFileSync(process.execPath, ["scripts/generate-app-permissions.js", "--stdout"], { encoding: "utf8" });
    expect(readFileSync(new URL("../shared/app-permissions.ts", import.meta.url), "utf8")).toBe(regenerated);
  });

  it("offers workflows and profile as write only, contents, pull_requests and metadata as read or write", () => {
    expect(APP_PERMISSIONS.workflows).toEqual(["write"]);
    expect(APP_PERMISSIONS.profile).toEqual(["write"]);
    for (const key of ["contents", "pull_requests", "metadata"]) expect(APP_PERMISSIONS[key]).toEqual(["read", "write"]);
  });

  it.each([
    ["workflows=read", "permission workflows cannot be read: the platform offers write"],
    ["profile:read", "permission profile cannot be read: the platform offers write"],
    ["pull_request=write", "unknown permission pull_request (not in the platform's App permission catalogue)"],
    ['{"constructor":"read"}', "unknown permission constructor (not in the platform's App permission catalogue)"],
    ["repository_projects=admin", "permission repository_projects must be read or write"],
  ])("%j is refused with a problem naming the key: %s", (setting, problem) => {
    expect(parseTokenPermissions(setting)).toEqual({ ok: false, problem });
  });

  it.each([["workflows=write"], ["metadata=read"], ['{"actions":"read","checks":"write"}']])("%j is accepted", (setting) => {
    expect(parseTokenPermissions(setting).ok).toBe(true);
  });

  it("the spawned broker names the key in its start-up line and answers 400 invalid_token_permissions", async () => {
    const broker = await spawnBroker({ ...t.fx.env, TOKEN_PERMISSIONS: "contents=write,workflows=read" });
    try {
      const line = broker.lines
        .map((l) => JSON.parse(l) as { msg?: string; problem?: string })
        .find((e) => e.msg?.startsWith("TOKEN_PERMISSIONS unusable"));
      expect(line?.problem).toBe("permission workflows cannot be read: the platform offers write");
      const token = await t.fx.sim.oidc.sign();
      secrets.push(token);
      const res = await postJson(`${broker.url}/token`, { oidcToken: token, owner: "octo-org", repo: "app" });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: "invalid_token_permissions" });
      expect(t.fx.sim.requests.filter((r) => r.path.endsWith("/access_tokens"))).toHaveLength(0);
    } finally {
      await broker.stop();
    }
  });
});
