// TOKEN_POLICY, POLICY_CACHE_SECONDS and POLICY_CHECK_RUNS as the broker reads them (table tests).
import { describe, expect, it } from "@jest/globals";
import { settingsProblems } from "../server/settings-problems.js";
import { parsePolicyMode, parseSettings } from "../server/settings.js";

describe("policy settings", () => {
  it.each<[string | undefined, string]>([
    [undefined, "optional"], ["", "optional"], ["  Optional ", "optional"], ["required", "required"], ["OFF", "off"],
  ])("TOKEN_POLICY %j → %s", (raw, mode) => {
    expect(parsePolicyMode(raw)).toEqual({ mode });
  });

  it("anything else fails closed (required) and is a start-up error that doctor fails on", () => {
    expect(parsePolicyMode("of")).toEqual({ mode: "required", problem: "TOKEN_POLICY is not optional, required or off: treated as required (fail closed)" });
    const env = { TOKEN_POLICY: "of" };
    expect(parseSettings(env).tokenPolicy).toBe("required");
    expect(settingsProblems(parseSettings(env), env)).toContainEqual({ level: "error", fails: true, fields: { setting: "TOKEN_POLICY" }, message: "TOKEN_POLICY is not optional, required or off: treated as required (fail closed)" });
  });

  it("POLICY_CACHE_SECONDS defaults to 60 (a malformed value too, with a problem); POLICY_CHECK_RUNS is a flag", () => {
    expect(parseSettings({})).toMatchObject({ tokenPolicy: "optional", policyCacheSeconds: 60, policyCheckRuns: false });
    expect(parseSettings({ POLICY_CACHE_SECONDS: "5", POLICY_CHECK_RUNS: "yes" })).toMatchObject({ policyCacheSeconds: 5, policyCheckRuns: true });
    const env = { POLICY_CACHE_SECONDS: "-1" };
    expect(parseSettings(env).policyCacheSeconds).toBe(60);
    expect(settingsProblems(parseSettings(env), env).map((p) => p.fields.setting)).toContain("POLICY_CACHE_SECONDS");
  });
});
