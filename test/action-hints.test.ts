// Every error code and reason word of the shared table turns into one line with the fix and the
// raw code (pure function: the table is the input).
import { describe, expect, it } from "@jest/globals";
import { describeVerdict } from "../action/hints.js";
import { ERROR_CODES, OIDC_REASONS, type ErrorCode } from "../shared/error-codes.js";

const context = { repository: "octo-org/app", audience: "tokensmith", brokerUrl: "https://broker.example" };

describe("describeVerdict", () => {
  it.each(Object.keys(ERROR_CODES) as ErrorCode[])("%s is one line with a fix, the code and the status", (code) => {
    const status = ERROR_CODES[code].status;
    const line = describeVerdict({ status, error: code }, context);
    expect(line).not.toMatch(/[\r\n]/);
    expect(line).toMatch(/^tokensmith: \S.{15,}\. \(error: /);
    expect(line).toContain(`(error: ${code}, HTTP ${status} from https://broker.example)`);
  });

  it.each(Object.keys(OIDC_REASONS))("invalid_oidc_token with reason %s keeps the reason and gives its fix", (reason) => {
    const line = describeVerdict({ status: 401, error: "invalid_oidc_token", reason }, context);
    expect(line).not.toMatch(/[\r\n]/);
    expect(line).toContain(`(error: invalid_oidc_token, reason: ${reason}, HTTP 401`);
    if (reason === "audience_mismatch") expect(line).toContain(`oidc-audience input ("tokensmith") and the broker's OIDC_AUDIENCE disagree`);
    else expect(line).toContain(OIDC_REASONS[reason as keyof typeof OIDC_REASONS].hint);
  });

  it("keeps a reason word this version does not know", () => {
    const line = describeVerdict({ status: 401, error: "invalid_oidc_token", reason: "brand_new_word" }, context);
    expect(line).toBe(`tokensmith: The broker refused the job's OIDC token: ${ERROR_CODES.invalid_oidc_token.hint} (error: invalid_oidc_token, reason: brand_new_word, HTTP 401 from https://broker.example)`);
  });

  it("names the repository for app_not_installed, repo_not_allowed and repo_mismatch", () => {
    for (const error of ["app_not_installed", "repo_not_allowed", "repo_mismatch"] as const) {
      expect(describeVerdict({ status: ERROR_CODES[error].status, error }, context)).toContain("octo-org/app");
    }
  });
});
