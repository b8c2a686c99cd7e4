// TOKEN_PERMISSIONS over HTTP: forms, rejection, and the intersection with what the installation holds.
import { describe, expect, it } from "@jest/globals";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";

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
