// Issue 27 item 1 over HTTP: a spawned broker, the simulator as GitHub (installation on octo-org/app
// holds contents: write, pull_requests: write, issues: read, metadata: read; TOKEN_PERMISSIONS is
// the default contents: write, pull_requests: write unless a test sets it). The body's
// `permissions` narrows the token to exactly those (the simulator records what the mint asked for
// and which permissions the token it issued holds); more than the grant → 403
// permissions_not_granted before any mint, with a detail naming what withheld each; malformed →
// 400 invalid_permissions before the OIDC token is even looked at.
import { describe, expect, it } from "@jest/globals";
import { APP_PERMISSIONS } from "../shared/app-permissions.js";
import { postJson } from "./support/broker.js";
import { brokerPerTest } from "./support/broker-per-test.js";

const secrets: string[] = [];
const t = brokerPerTest({ secrets });

async function exchange(permissions: unknown, options: { oidcToken?: string } = {}) {
  const oidcToken = options.oidcToken ?? (await t.fx.sim.oidc.sign());
  secrets.push(oidcToken);
  const res = await postJson(`${t.broker.url}/token`, { oidcToken, owner: "octo-org", repo: "app", ...(permissions === undefined ? {} : { permissions }) });
  if (typeof res.body?.token === "string") secrets.push(res.body.token);
  return res;
}

const mints = () => t.fx.sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens"));
const mintAnswer = () => mints()[0]?.response?.body as { permissions?: unknown } | undefined;

describe("a step's permissions narrow its token", () => {
  it.each([
    [{ contents: "read" }],
    [{ pull_requests: "write" }],
    [{ contents: "write", pull_requests: "read" }],
  ])("%j: the mint asks for exactly those, the token holds exactly those, the answer says so", async (permissions) => {
    const res = await exchange(permissions);
    expect(res.status).toBe(200);
    expect(mints()).toHaveLength(1);
    expect((mints()[0]!.body as { permissions?: unknown }).permissions).toEqual(permissions);
    expect(t.fx.sim.tokens.get(res.body.token as string)?.permissions).toEqual(permissions);
    // The answer's permissions are the mint's answer, not the request echoed.
    expect(res.body.permissions).toEqual(mintAnswer()?.permissions);
    expect(res.body.permissions).toEqual(permissions);
  });

  it("within a narrowed TOKEN_PERMISSIONS and the installation's read-only issues", async () => {
    t.broker.env.TOKEN_PERMISSIONS = "contents=write,issues=write";
    const res = await exchange({ issues: "read" });
    expect(res.status).toBe(200);
    expect(t.fx.sim.tokens.get(res.body.token as string)?.permissions).toEqual({ issues: "read" });
  });

  it("without permissions: the whole grant, as before, and the answer carries the token's permissions", async () => {
    const res = await exchange(undefined);
    expect(res.status).toBe(200);
    expect((mints()[0]!.body as { permissions?: unknown }).permissions).toEqual({ contents: "write", pull_requests: "write" });
    expect(res.body.permissions).toEqual({ contents: "write", pull_requests: "write" });
  });

  it("null reads as absent (as for the other optional fields)", async () => {
    const res = await exchange(null);
    expect(res.status).toBe(200);
    expect(res.body.permissions).toEqual({ contents: "write", pull_requests: "write" });
  });

  it("the audit line records what was asked for and what the token holds, and no token", async () => {
    const res = await exchange({ contents: "read" });
    expect(res.status).toBe(200);
    const audit = t.broker.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry.audit === "token_minted");
    expect(audit).toMatchObject({ permissions: { contents: "read" }, requested_permissions: { contents: "read" } });
  });
});

describe("more than the grant: 403 permissions_not_granted, no mint", () => {
  it.each([
    // Beyond TOKEN_PERMISSIONS only (the installation holds issues: read).
    [{ issues: "read" }, "issues: read withheld by TOKEN_PERMISSIONS (not granted)"],
    // Beyond both, the installation holding read only.
    [{ contents: "read", issues: "write" }, "issues: write withheld by TOKEN_PERMISSIONS (not granted), installation (read only)"],
    // Beyond both, the installation lacking it; two withheld permissions, in request order.
    [{ checks: "write", actions: "read" }, "checks: write, actions: read withheld by TOKEN_PERMISSIONS (not granted), installation (not granted)"],
    // Withheld differently: one group each, in request order.
    [{ checks: "read", issues: "write", actions: "read" }, "checks: read, actions: read withheld by TOKEN_PERMISSIONS (not granted), installation (not granted); issues: write withheld by TOKEN_PERMISSIONS (not granted), installation (read only)"],
  ])("%j → detail %j", async (permissions, detail) => {
    const res = await exchange(permissions);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "permissions_not_granted", detail });
    expect(res.headers.get("retry-after")).toBeNull();
    expect(mints()).toHaveLength(0);
  });

  it("beyond the installation only: TOKEN_PERMISSIONS allows issues: write, the installation holds read", async () => {
    t.broker.env.TOKEN_PERMISSIONS = '{"contents":"write","issues":"write"}';
    const res = await exchange({ issues: "write" });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "permissions_not_granted", detail: "issues: write withheld by installation (read only)" });
    expect(mints()).toHaveLength(0);
  });

  it("a denial keeps the cached installation: five denials and a grant cost one installation lookup", async () => {
    for (let i = 0; i < 5; i += 1) expect((await exchange({ checks: "write" })).status).toBe(403);
    expect((await exchange({ contents: "read" })).status).toBe(200);
    const lookups = t.fx.sim.requests.filter((r) => r.method === "GET" && r.path.endsWith("/installation"));
    expect(lookups).toHaveLength(1);
    expect(mints()).toHaveLength(1);
  });

  it("a denial is decided after the OIDC token is verified: a bad token is still 401", async () => {
    const res = await exchange({ issues: "write" }, { oidcToken: "not-a-jwt" });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("invalid_oidc_token");
  });
});

describe("malformed permissions: 400 invalid_permissions, before the OIDC token is looked at", () => {
  it.each([
    [[], "permissions is not a JSON object"],
    ["contents=read", "permissions is not a JSON object"],
    [7, "permissions is not a JSON object"],
    [{}, "permissions names no permission"],
    [{ contents: "admin" }, 'permission contents must be "read" or "write"'],
    [{ contents: "READ" }, 'permission contents must be "read" or "write"'],
    [{ contents: true }, 'permission contents must be "read" or "write"'],
    [{ Contents: "read" }, 'permission name "Contents" is not lowercase words joined by underscores'],
    [{ "pull-requests": "read" }, 'permission name "pull-requests" is not lowercase words joined by underscores'],
    [{ pull_request: "read" }, "unknown permission pull_request (not in the platform's App permission catalogue)"],
    [{ workflows: "read" }, "permission workflows cannot be read: the platform offers write"],
    [{ constructor: "read" }, "unknown permission constructor (not in the platform's App permission catalogue)"],
  ])("%j → detail %j", async (permissions, detail) => {
    t.fx.sim.clearRequests();
    // A token that would fail verification: the 400 comes first (docs/design.md#order-of-checks: fields before OIDC).
    const res = await exchange(permissions, { oidcToken: "not-a-jwt" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_permissions", detail });
    expect(mints()).toHaveLength(0);
  });

  it("__proto__ as a key is a name problem, and pollutes nothing", async () => {
    const oidcToken = await t.fx.sim.oidc.sign();
    secrets.push(oidcToken);
    const res = await postJson(`${t.broker.url}/token`, `{"oidcToken":${JSON.stringify(oidcToken)},"owner":"octo-org","repo":"app","permissions":{"__proto__":{"contents":"write"}}}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "invalid_permissions", detail: 'permission name "__proto__" is not lowercase words joined by underscores' });
  });

  it("a name as long as the body allows is cut short in the detail", async () => {
    const name = "a".repeat(5000);
    const res = await exchange({ [name]: "read" }, { oidcToken: "not-a-jwt" });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_permissions");
    expect((res.body.detail as string).length).toBeLessThan(200);
  });

  it("every permission of the catalogue at a level it offers parses (a deny or a grant, never a 400)", async () => {
    const permissions = Object.fromEntries(Object.entries(APP_PERMISSIONS).map(([name, levels]) => [name, levels.includes("read") ? "read" : "write"]));
    const res = await exchange(permissions);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("permissions_not_granted");
    const detail = res.body.detail as string;
    expect(detail).not.toMatch(/[\r\n]/);
    expect(detail).not.toContain("…"); // whole, not cut at the body's bound
    // Every requested permission but contents and pull_requests (in the grant) is named.
    const named = new Set([...detail.matchAll(/(?:^|, |; )([a-z_]+): (?:read|write)/g)].map((m) => m[1]));
    expect([...named].sort()).toEqual(Object.keys(permissions).filter((name) => name !== "contents" && name !== "pull_requests").sort());
  });
});
