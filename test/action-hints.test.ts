// Every error code and reason word of the shared table turns into one line for the workflow's
// owner, with the fix and the raw code (pure function: the table is the input).
import { describe, expect, it } from "@jest/globals";
import { describeVerdict, MISMATCH, REASON_HINTS, WORKFLOW_HINTS } from "../action/hints.js";
import { ERROR_CODES, OIDC_REASONS, type ErrorCode } from "../shared/error-codes.js";

const context = { repository: "octo-org/app", audience: "tokensmith", brokerUrl: "https://broker.example" };

// What a correct action never causes at a correct broker's /token: request-shape codes and other routes' codes.
const NEVER_FROM_A_CORRECT_ACTION = ["not_found", "method_not_allowed", "payload_too_large", "invalid_json", "invalid_request", "missing_required_fields", "sign_failed", "unauthorized", "no_file_changes", "invalid_repo", "sign_disabled", "releases_disabled", "platform_rate_limited", "invalid_signature", "webhook_disabled", "webhook_queue_unavailable"];

describe("describeVerdict", () => {
  it.each(Object.keys(ERROR_CODES) as ErrorCode[])("%s is one line with a fix, the code and the status", (code) => {
    const status = ERROR_CODES[code].status;
    const line = describeVerdict({ status, error: code }, context);
    expect(line).not.toMatch(/[\r\n]/);
    expect(line).toMatch(/^tokensmith: \S.{15,}[.)] \(error: /);
    expect(line).toContain(`(error: ${code}, HTTP ${status} from https://broker.example)`);
    // Written for a workflow author, not an API caller: no advice about request bodies or headers.
    expect(line).not.toMatch(/request body|Send |Authorization: Bearer/);
  });

  it("says 'version or URL mismatch' exactly for the codes a correct action never causes", () => {
    const mismatch = (Object.keys(WORKFLOW_HINTS) as ErrorCode[]).filter((code) => WORKFLOW_HINTS[code].includes(MISMATCH));
    expect(mismatch.sort()).toEqual([...NEVER_FROM_A_CORRECT_ACTION].sort());
  });

  it.each(Object.keys(OIDC_REASONS))("invalid_oidc_token with reason %s keeps the reason and gives its workflow hint", (reason) => {
    const line = describeVerdict({ status: 401, error: "invalid_oidc_token", reason }, context);
    expect(line).not.toMatch(/[\r\n]/);
    expect(line).toContain(`(error: invalid_oidc_token, reason: ${reason}, HTTP 401`);
    if (reason === "audience_mismatch") expect(line).toContain(`oidc-audience input ("tokensmith") and the broker's OIDC_AUDIENCE disagree`);
    else expect(line).toContain(REASON_HINTS[reason as keyof typeof REASON_HINTS]);
  });

  it("quotes and escapes a reason word this version does not know", () => {
    const line = describeVerdict({ status: 401, error: "invalid_oidc_token", reason: "brand_new\n::error::x" }, context);
    expect(line).toBe(
      `tokensmith: The broker refused the job's OIDC token. Its reason is a word this version of the action does not know: tell the broker's operator. (error: invalid_oidc_token, reason: "brand_new\\u000a::error::x", HTTP 401 from https://broker.example)`,
    );
  });

  it("names the repository for app_not_installed, repo_not_allowed and repo_mismatch", () => {
    for (const error of ["app_not_installed", "repo_not_allowed", "repo_mismatch"] as const) {
      expect(describeVerdict({ status: ERROR_CODES[error].status, error }, context)).toContain("octo-org/app");
    }
  });
});
