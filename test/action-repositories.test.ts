// The action's side of `repositories` (docs/policies.md#other-repositories), pure: the input as
// actions/create-github-app-token reads it (comma- or newline-separated), checked before anything
// is sent, and the broker's answer checked to cover exactly the job's repository and the named ones.
import { describe, expect, it } from "@jest/globals";
import { checkAnswer } from "../action/check-answer.js";
import { readRepositories } from "../action/inputs.js";

describe("readRepositories (the repositories input)", () => {
  it.each([
    ["", []],
    ["website", ["website"]],
    ["website, docs", ["website", "docs"]],
    ["website\ndocs\n", ["website", "docs"]],
    ["octo-org/website,Website, app ,\r\n docs", ["website", "docs"]],
    ["App", []],
  ])("%j → %j (the job's own repository left out, repeats dropped, compared case-insensitively)", (raw, names) => {
    expect(readRepositories(raw, "octo-org", "app")).toEqual(names);
  });

  it.each([
    ["other-org/site", 'tokensmith: repositories: repository "other-org/site" is not of the owner octo-org (a token covers repositories of one owner).'],
    ["my site", 'tokensmith: repositories: repository "my site" is not a repository name (letters, digits, ., - and _).'],
    ["..", 'tokensmith: repositories: repository ".." is not a repository name (letters, digits, ., - and _).'],
    [Array.from({ length: 21 }, (_, i) => `r${i}`).join(","), "tokensmith: repositories names 21 other repositories; at most 20."],
  ])("%j fails the step before anything is sent", (raw, message) => {
    expect(() => readRepositories(raw, "octo-org", "app")).toThrow(message);
  });
});

describe("checkAnswer: the answer's repositories", () => {
  const now = Date.parse("2026-11-26T00:00:00Z");
  const answer = (repositories?: unknown) => ({ token: "ghs_checkAnswerRepositories0000000000001", expires_at: "2026-11-26T01:00:00Z", repository: "octo-org/app", ...(repositories === undefined ? {} : { repositories }) });
  const check = (repositories: unknown, others?: string[]) => checkAnswer(answer(repositories), { repositories: ["octo-org/app"], now, ...(others ? { others } : {}) });

  it("without others: the job's own repository, whatever the broker sent", () => {
    expect(check(undefined)).toMatchObject({ ok: true, answer: { repositories: ["octo-org/app"] } });
  });

  it("with others: exactly the job's first and the named ones, in any order, names compared case-insensitively", () => {
    expect(check(["octo-org/app", "octo-org/Website", "octo-org/docs"], ["octo-org/docs", "octo-org/website"])).toMatchObject({ ok: true, answer: { repositories: ["octo-org/app", "octo-org/Website", "octo-org/docs"] } });
  });

  it.each([
    [undefined, "the answer does not list the repositories the token covers, though the step's repositories input named some (a broker too old for it ignores it)"],
    ["octo-org/app", 'repositories "octo-org/app" is not a list of repository names'],
    [["octo-org/app"], "the token covers \"octo-org/app\", not octo-org/app, octo-org/website as the step asked"],
    [["octo-org/website", "octo-org/app"], "the token covers \"octo-org/website\", \"octo-org/app\", not octo-org/app, octo-org/website as the step asked"],
    [["octo-org/app", "octo-org/website", "octo-org/secrets"], "the token covers \"octo-org/app\", \"octo-org/website\", \"octo-org/secrets\", not octo-org/app, octo-org/website as the step asked"],
    [["octo-org/app", "octo-org/web\nsite"], 'repositories "[\\"octo-org/app\\",\\"octo-org/web\\\\nsite\\"]" is not a list of repository names'],
  ])("%j is refused, the token to be revoked", (repositories, problem) => {
    const result = check(repositories, ["octo-org/website"]);
    expect(result).toEqual({ ok: false, problem: expect.any(String), token: "ghs_checkAnswerRepositories0000000000001" });
    if (!result.ok) expect(result.problem).toBe(problem);
  });
});
