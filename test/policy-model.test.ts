// Model-based (fast-check): checkPolicy against a plain model of rule matching, and the narrowing
// algebra: whatever the policies and ceilings, the grant never exceeds any ceiling or the request.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { stringify } from "yaml";
import { checkPolicy, DENIAL_RULES_SHOWN } from "../server/policy/check-policy.js";
import { createPolicyCompiler } from "../server/policy/compile-policy.js";
import type { BrokerError } from "../shared/broker-error.js";
import type { Permissions } from "../shared/token-permissions.js";
import { decideConsent } from "../server/policy/decide-consent.js";
import { grantPermissions, type PermissionCeiling } from "../server/token/grant-permissions.js";
import { permissionsToMint } from "../server/token/permissions-to-mint.js";

const compiler = createPolicyCompiler();
const KEYS = { ref: "ref", event: "event_name", actor: "actor", environment: "environment" } as const;
type Key = keyof typeof KEYS;
const WORDS = ["a", "b", "a/b", "ab", "b/a"];

// A pattern is a literal word or `word*` (GitHub's `*`: any run without `/`).
const pattern = fc.record({ word: fc.constantFrom(...WORDS), star: fc.boolean() });
const conditions = fc.dictionary(fc.constantFrom<Key>("ref", "event", "actor", "environment"), fc.array(pattern, { minLength: 1, maxLength: 2 }), { maxKeys: 3 });
const rules = fc.array(conditions, { minLength: 1, maxLength: 8 });
const claims = fc.dictionary(fc.constantFrom(...Object.values(KEYS)), fc.constantFrom(...WORDS, "a/b/c", "abc"), { maxKeys: 4 });

const modelMatch = (p: { word: string; star: boolean }, value: string) => (p.star ? value.startsWith(p.word) && !value.slice(p.word.length).includes("/") : value === p.word);
const modelHolds = (rule: Record<string, Array<{ word: string; star: boolean }>>, job: Record<string, string>) =>
  Object.entries(rule).every(([key, patterns]) => {
    const value = job[KEYS[key as Key]];
    return value !== undefined && patterns.some((p) => modelMatch(p, value));
  });

describe("rule matching against the model", () => {
  it("the first rule that holds in the model is the one checkPolicy picks; otherwise the denial names up to five rules", () => {
    fc.assert(
      fc.property(rules, claims, fc.nat(), (ruleList, job, pick) => {
        const text = stringify({
          rules: ruleList.map((rule, i) => ({
            name: `r${i}`,
            if: Object.fromEntries(Object.entries(rule).map(([key, patterns]) => [key, patterns.map((p) => p.word + (p.star ? "*" : ""))])),
            permissions: { contents: "read" },
          })),
        });
        const compiled = compiler.compile(text, "repository", "model.yml");
        if (!compiled.ok) throw new Error(compiled.detail);
        const expected = ruleList.findIndex((rule) => modelHolds(rule, job));
        const result = checkPolicy(compiled.policy, job);
        if (expected === -1) {
          expect(result.ok).toBe(false);
          if (!result.ok) {
            expect(result.detail.match(/rule r\d+:/g)).toHaveLength(Math.min(ruleList.length, DENIAL_RULES_SHOWN));
            expect(result.detail).not.toContain("\n");
          }
        } else {
          expect(result.ok && result.rule.name).toBe(`r${expected}`);
        }
        // A named rule holds exactly when the model says it does.
        const named = pick % ruleList.length;
        expect(checkPolicy(compiled.policy, job, { rule: `r${named}` }).ok).toBe(modelHolds(ruleList[named]!, job));
      }),
      { numRuns: 300 },
    );
  });
});

describe("narrowing algebra", () => {
  const level = fc.constantFrom("read", "write");
  const names = fc.constantFrom("contents", "pull_requests", "issues", "checks", "metadata");
  const perms = fc.dictionary(names, level, { maxKeys: 5 });
  const rank = (l: string | undefined) => (l === "write" || l === "admin" ? 2 : l === "read" ? 1 : 0);

  it("the grant never exceeds the request or any ceiling, and keeps what all of them allow", () => {
    fc.assert(
      fc.property(perms, fc.array(fc.dictionary(names, fc.constantFrom("read", "write", "admin"), { maxKeys: 5 }), { maxLength: 4 }), (requested, ceilings) => {
        // TOKEN_PERMISSIONS first, then the rules' ceilings, as /token and `policy explain` pass them (no step request).
        const result = grantPermissions({ ceilings: [{ source: "TOKEN_PERMISSIONS", permissions: requested }, ...ceilings.map((permissions, i) => ({ source: `rule c${i}`, permissions }))] });
        if (!result.ok) throw new Error("a grant without a request is never refused");
        const grant = result.permissions;
        for (const [name, l] of Object.entries(grant)) {
          expect(rank(l)).toBeLessThanOrEqual(rank(requested[name]));
          for (const ceiling of ceilings) expect(rank(l)).toBeLessThanOrEqual(rank(ceiling[name]));
        }
        for (const name of Object.keys(requested)) {
          const expected = Math.min(rank(requested[name]), ...ceilings.map((c) => rank(c[name])));
          expect(rank(grant[name])).toBe(expected);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe("other repositories (repositories): consent and the narrowing across targets", () => {
  const level = fc.constantFrom("read", "write");
  const names = fc.constantFrom("contents", "pull_requests", "issues", "checks");
  const perms = fc.dictionary(names, level, { maxKeys: 4 });
  // What a policy rule grants names at least one permission (the schema's rule).
  const granted = fc.dictionary(names, level, { minKeys: 1, maxKeys: 4 });
  const rank = (l: string | undefined) => (l === "write" || l === "admin" ? 2 : l === "read" ? 1 : 0);
  // A target's rule: with or without a `repository` condition (matching the caller or not), an
  // event condition that holds or not, and what it lends.
  const targetRule = fc.record({ repository: fc.constantFrom("none", "caller", "glob", "other"), eventHolds: fc.boolean(), permissions: granted });
  const target = fc.record({ rules: fc.option(fc.array(targetRule, { minLength: 1, maxLength: 4 }), { nil: undefined }), owner: fc.option(granted, { nil: undefined }) });
  const REPOSITORY = { caller: "octo-org/app", glob: "octo-org/*", other: "octo-org/lib" } as const;
  const job = { repository: "octo-org/app", event_name: "push" };

  const compileTarget = (rules: Array<{ repository: string; eventHolds: boolean; permissions: Record<string, string> }>) => {
    const text = stringify({
      rules: rules.map((rule, i) => ({
        name: `t${i}`,
        if: { ...(rule.repository === "none" ? {} : { repository: REPOSITORY[rule.repository as keyof typeof REPOSITORY] }), event: rule.eventHolds ? "push" : "pull_request" },
        permissions: rule.permissions,
      })),
    });
    const compiled = compiler.compile(text, "repository", "target.yml");
    if (!compiled.ok) throw new Error(compiled.detail);
    return compiled.policy;
  };
  const ownerPolicy = (permissions: Record<string, string>) => {
    const compiled = compiler.compile(stringify({ rules: [{ name: "all", permissions }] }), "owner", "org.yml");
    if (!compiled.ok) throw new Error(compiled.detail);
    return compiled.policy;
  };

  it("a target consents exactly when the model's first rule with a repository condition holds; the token is never more than TOKEN_PERMISSIONS ∩ installation ∩ the caller's rule ∩ each target's grant", () => {
    fc.assert(
      fc.property(perms, perms, perms, fc.array(target, { minLength: 1, maxLength: 3 }), fc.option(perms, { nil: undefined }), (tokenPermissions, installation, callerRule, targets, request) => {
        const ceilings: PermissionCeiling[] = [{ source: "rule caller", permissions: callerRule }];
        const lent: Array<Record<string, string>> = [];
        let everyConsents = true;
        for (const [i, t] of targets.entries()) {
          const owner = t.owner === undefined ? null : ownerPolicy(t.owner);
          const decision = decideConsent({ repository: t.rules ? compileTarget(t.rules) : null, owner, claims: job, targetName: `t${i}` });
          const consenting = t.rules?.find((rule) => rule.repository !== "none" && rule.repository !== "other" && rule.eventHolds);
          expect(decision.ok).toBe(consenting !== undefined);
          if (!decision.ok || !consenting) {
            everyConsents = false;
            continue;
          }
          // What it lends: its consenting rule ∩ the owner rule, never more than either.
          for (const [name, l] of Object.entries(decision.permissions)) {
            expect(rank(l)).toBeLessThanOrEqual(rank(consenting.permissions[name]));
            if (t.owner) expect(rank(l)).toBeLessThanOrEqual(rank(t.owner[name]));
          }
          lent.push(decision.permissions);
          ceilings.push({ source: `repository octo-org/t${i}`, permissions: decision.permissions });
        }
        if (!everyConsents) return; // /token denies before any mint
        let minted: Record<string, string>;
        try {
          minted = permissionsToMint({ tokenPermissions: tokenPermissions as Permissions, policyCeilings: ceilings, installation, ...(request ? { requested: request as Permissions } : {}) });
        } catch (error) {
          expect((error as BrokerError).code).toBe("permissions_not_granted");
          expect(request).toBeDefined();
          return;
        }
        for (const [name, l] of Object.entries(minted)) {
          if (name === "metadata" && l === "read" && Object.keys(minted).length === 1) continue; // the empty grant's stand-in
          for (const bound of [tokenPermissions, installation, callerRule, ...lent]) expect(rank(l)).toBeLessThanOrEqual(rank(bound[name]));
          if (request) expect(rank(l)).toBeLessThanOrEqual(rank(request[name]));
        }
      }),
      { numRuns: 500 },
    );
  });
  it("under repository_policies: ignore, a target is lent exactly when the model's first owner rule with a repository condition holding for the job lists it (.github only literally); a target's own file plays no part", () => {
    const TARGETS = ["other", "secrets-store", ".github", "svc-a"];
    const LISTS = { other: "other", "svc-*": "svc-*", star: "*", gitStar: ".git*", github: ".github", GitHub: ".GitHub" } as const;
    type List = keyof typeof LISTS;
    const ownerRule = fc.record({
      repository: fc.constantFrom("none", "caller", "other"),
      repositories: fc.option(fc.uniqueArray(fc.constantFrom(...(Object.keys(LISTS) as List[])), { minLength: 1, maxLength: 3 }), { nil: undefined }),
      eventHolds: fc.boolean(),
      permissions: granted,
    });
    const REPO = { caller: "octo-org/app", other: "octo-org/lib" } as const;
    const modelList = (list: List, target: string) => {
      const pattern = LISTS[list].toLowerCase();
      if (target === ".github") return pattern === ".github"; // never by a glob
      return pattern === "*" ? true : pattern.endsWith("*") ? target.startsWith(pattern.slice(0, -1)) : target === pattern;
    };
    fc.assert(
      fc.property(fc.array(ownerRule, { minLength: 1, maxLength: 5 }), fc.constantFrom(...TARGETS), fc.option(fc.array(targetRule, { minLength: 1, maxLength: 2 }), { nil: undefined }), (rules, targetName, targetRules) => {
        const text = stringify({
          repository_policies: "ignore",
          rules: rules.map((rule, i) => ({
            name: `o${i}`,
            ...(rule.repositories ? { repositories: rule.repositories.map((list) => LISTS[list]) } : {}),
            if: { ...(rule.repository === "none" ? {} : { repository: REPO[rule.repository as keyof typeof REPO] }), event: rule.eventHolds ? "push" : "pull_request" },
            permissions: rule.permissions,
          })),
        });
        const compiled = compiler.compile(text, "owner", "org.yml");
        if (!compiled.ok) throw new Error(compiled.detail);
        const decision = decideConsent({ repository: targetRules ? compileTarget(targetRules) : null, owner: compiled.policy, claims: job, targetName });
        const lender = rules.findIndex((rule) => rule.repository === "caller" && rule.eventHolds && rule.repositories !== undefined && rule.repositories.some((list) => modelList(list, targetName)));
        expect(decision.ok).toBe(lender >= 0);
        if (decision.ok) expect(decision).toEqual({ ok: true, permissions: rules[lender]!.permissions, ownerRule: `o${lender}` });
      }),
      { numRuns: 500 },
    );
  });
});
