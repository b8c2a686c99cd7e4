// The narrowing algebra of server/token/grant-permissions.ts against a model, with fast-check:
// random ceilings (TOKEN_PERMISSIONS, the installation with its `admin` levels, a third named
// source as a policy rule will be) over a small name set so that overlaps are common, and a random
// per-step request or none. Whatever the inputs:
// - the grant is never more than any ceiling, nor (with a request) more than the request;
// - with a request, it is exactly the request or a denial, and the withheld list is exactly the
//   requested permissions some ceiling falls short of, each naming exactly those ceilings, in order;
// - with no request, it is the ceilings' intersection (lowest level), as intersectPermissions has
//   always minted for TOKEN_PERMISSIONS ∩ installation;
// - permissionsToMint (what /token asks the platform for) throws 403 permissions_not_granted with
//   describeWithheld's line exactly when the grant is a denial.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { BrokerError } from "../shared/broker-error.js";
import type { PermissionLevel, Permissions } from "../shared/token-permissions.js";
import { intersectPermissions } from "../server/installation/intersect-permissions.js";
import { describeWithheld, grantPermissions, type PermissionCeiling } from "../server/token/grant-permissions.js";
import { permissionsToMint } from "../server/token/permissions-to-mint.js";

const NAMES = ["contents", "pull_requests", "issues", "metadata", "checks", "organization_projects"] as const;
const RANK: Record<string, number> = { read: 1, write: 2, admin: 3 };

const requestArb: fc.Arbitrary<Permissions> = fc.dictionary(fc.constantFrom(...NAMES), fc.constantFrom<PermissionLevel>("read", "write"), { minKeys: 1 });
const ceilingPermissionsArb = (levels: string[]) => fc.dictionary(fc.constantFrom(...NAMES), fc.constantFrom(...levels));
const ceilingsArb: fc.Arbitrary<PermissionCeiling[]> = fc
  .tuple(ceilingPermissionsArb(["read", "write"]), ceilingPermissionsArb(["read", "write", "admin"]), fc.option(ceilingPermissionsArb(["read", "write"]), { nil: undefined }))
  .map(([tokenPermissions, installation, rule]) => [
    { source: "TOKEN_PERMISSIONS", permissions: tokenPermissions },
    { source: "installation", permissions: installation },
    ...(rule ? [{ source: "rule release", permissions: rule }] : []),
  ]);

const rank = (permissions: Readonly<Record<string, string>>, name: string) => (Object.hasOwn(permissions, name) ? RANK[permissions[name]!] ?? 0 : 0);

/** The model: what each ceiling allows, name by name, written out plainly. */
function modelWithheld(ceilings: PermissionCeiling[], requested: Permissions) {
  const withheld = [];
  for (const name of Object.keys(requested)) {
    const want = RANK[requested[name]!]!;
    const by = ceilings.filter((c) => rank(c.permissions, name) < want).map((c) => (rank(c.permissions, name) === 0 ? { source: c.source } : { source: c.source, allows: "read" }));
    if (by.length > 0) withheld.push({ permission: name, requested: requested[name], withheldBy: by });
  }
  return withheld;
}

describe("grantPermissions: the narrowing algebra", () => {
  it("with a request: exactly the request, or a denial whose withheld list is exact; never more than any ceiling or the request", () => {
    fc.assert(
      fc.property(ceilingsArb, requestArb, (ceilings, requested) => {
        const grant = grantPermissions({ ceilings, requested });
        const expected = modelWithheld(ceilings, requested);
        if (expected.length > 0) {
          expect(grant).toEqual({ ok: false, withheld: expected });
          return;
        }
        expect(grant).toEqual({ ok: true, permissions: requested });
        if (!grant.ok) return;
        for (const [name, level] of Object.entries(grant.permissions)) {
          expect(RANK[level]).toBeLessThanOrEqual(rank(requested, name));
          for (const ceiling of ceilings) expect(RANK[level]).toBeLessThanOrEqual(rank(ceiling.permissions, name));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("with no request: the ceilings' intersection at the lowest level; TOKEN_PERMISSIONS ∩ installation is what intersectPermissions minted", () => {
    fc.assert(
      fc.property(ceilingsArb, (ceilings) => {
        const grant = grantPermissions({ ceilings });
        expect(grant.ok).toBe(true);
        if (!grant.ok) return;
        const expected: Permissions = {};
        for (const name of NAMES) {
          const lowest = Math.min(...ceilings.map((c) => rank(c.permissions, name)));
          if (lowest > 0) expected[name] = lowest === 1 ? "read" : "write";
        }
        expect(grant.permissions).toEqual(expected);
        if (ceilings.length === 2) {
          const minted = intersectPermissions(ceilings[0]!.permissions as Permissions, ceilings[1]!.permissions);
          const nothing = Object.keys(expected).length === 0;
          expect(minted).toEqual(nothing ? { metadata: "read" } : expected);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("a request the grant covers is granted whatever else the ceilings hold (narrowing only: adding to a ceiling never denies)", () => {
    fc.assert(
      fc.property(ceilingsArb, requestArb, ceilingPermissionsArb(["read", "write"]), (ceilings, requested, extra) => {
        const before = grantPermissions({ ceilings, requested });
        const widened = ceilings.map((c) => ({ source: c.source, permissions: { ...extra, ...c.permissions } }));
        const after = grantPermissions({ ceilings: widened, requested });
        if (before.ok) expect(after).toEqual(before);
      }),
      { numRuns: 1000 },
    );
  });

  it("a request level other than read or write (an unparsed request) fails closed: it throws, nothing is granted", () => {
    const ceilings = [{ source: "TOKEN_PERMISSIONS", permissions: { contents: "write" } }];
    expect(() => grantPermissions({ ceilings, requested: { contents: "admin" } as unknown as Permissions })).toThrow(TypeError);
    expect(() => grantPermissions({ ceilings, requested: JSON.parse('{"contents": 1}') as Permissions })).toThrow(TypeError);
  });

  it("no ceilings grant nothing: every request is withheld", () => {
    expect(grantPermissions({ ceilings: [] })).toEqual({ ok: true, permissions: {} });
    expect(grantPermissions({ ceilings: [], requested: { contents: "read" } })).toEqual({ ok: false, withheld: [{ permission: "contents", requested: "read", withheldBy: [{ source: "no ceiling" }] }] });
  });

  it("reads only own properties and known levels: __proto__, constructor and odd values grant nothing", () => {
    const hostile = JSON.parse('{"__proto__": {"contents": "write"}, "constructor": "write", "issues": "owner", "checks": 7}') as Record<string, string>;
    const ceilings = [{ source: "TOKEN_PERMISSIONS", permissions: { contents: "write", constructor: "write", issues: "write", checks: "write" } }, { source: "installation", permissions: hostile }];
    expect(grantPermissions({ ceilings })).toEqual({ ok: true, permissions: { constructor: "write" } });
    const denied = grantPermissions({ ceilings, requested: { contents: "read", issues: "read", checks: "read" } });
    expect(denied.ok).toBe(false);
    if (!denied.ok) expect(denied.withheld.map((w) => w.permission)).toEqual(["contents", "issues", "checks"]);
  });
});

describe("describeWithheld and permissionsToMint", () => {
  it("names each permission, its level and every source that withheld it, on one line", () => {
    const line = describeWithheld([
      { permission: "issues", requested: "write", withheldBy: [{ source: "TOKEN_PERMISSIONS" }, { source: "installation", allows: "read" }] },
      { permission: "checks", requested: "read", withheldBy: [{ source: "installation" }] },
    ]);
    expect(line).toBe("issues: write withheld by TOKEN_PERMISSIONS (not granted), installation (read only); checks: read withheld by installation (not granted)");
  });

  it("groups permissions withheld alike, in request order", () => {
    const line = describeWithheld([
      { permission: "checks", requested: "read", withheldBy: [{ source: "installation" }] },
      { permission: "issues", requested: "write", withheldBy: [{ source: "TOKEN_PERMISSIONS" }] },
      { permission: "actions", requested: "write", withheldBy: [{ source: "installation" }] },
    ]);
    expect(line).toBe("checks: read, actions: write withheld by installation (not granted); issues: write withheld by TOKEN_PERMISSIONS (not granted)");
  });

  it("throws 403 permissions_not_granted with the detail exactly when the grant is a denial; an empty grant asks for metadata: read", () => {
    fc.assert(
      fc.property(ceilingsArb, fc.option(requestArb, { nil: undefined }), (ceilings, requested) => {
        const [tokenPermissions, installation] = ceilings as [PermissionCeiling, PermissionCeiling];
        const grant = grantPermissions({ ceilings: [tokenPermissions, installation], ...(requested ? { requested } : {}) });
        let outcome: Permissions | BrokerError;
        try {
          outcome = permissionsToMint({ tokenPermissions: tokenPermissions.permissions as Permissions, installation: installation.permissions, ...(requested ? { requested } : {}) });
        } catch (error) {
          outcome = error as BrokerError;
        }
        if (grant.ok) {
          expect(outcome).toEqual(Object.keys(grant.permissions).length > 0 ? grant.permissions : { metadata: "read" });
        } else {
          expect(outcome).toBeInstanceOf(BrokerError);
          const body = (outcome as BrokerError).toBody();
          expect(body).toEqual({ error: "permissions_not_granted", detail: describeWithheld(grant.withheld) });
          expect((outcome as BrokerError).status).toBe(403);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
