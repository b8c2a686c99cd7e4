// docs/errors.md: any error may carry `detail`, one human line. The broker's side
// (BrokerError: only the answer detail reaches a body, made one line and bounded; the log-only
// `detail` never does) and the action's (the verdict line quotes it, escaped and cut).
import { describe, expect, it } from "@jest/globals";
import { describeVerdict, MAX_SHOWN_DETAIL } from "../action/hints.js";
import { BrokerError, MAX_DETAIL_LENGTH } from "../shared/broker-error.js";

describe("BrokerError's body detail", () => {
  it("only answerDetail reaches the body; the log-only detail stays in the message", () => {
    expect(new BrokerError("installation_token_failed", { detail: "status 502" }).toBody()).toEqual({ error: "installation_token_failed" });
    const error = new BrokerError("permissions_not_granted", { detail: "for the log", answerDetail: "issues: write withheld by installation (read only)" });
    expect(error.toBody()).toEqual({ error: "permissions_not_granted", detail: "issues: write withheld by installation (read only)" });
    expect(error.message).toBe("permissions_not_granted: for the log");
  });

  it("keeps reason and detail together, reason first", () => {
    expect(Object.keys(new BrokerError("invalid_oidc_token", { reason: "claim_invalid", answerDetail: "x" }).toBody())).toEqual(["error", "reason", "detail"]);
  });

  it("is one line and bounded, whatever went into it", () => {
    const body = new BrokerError("invalid_permissions", { answerDetail: `a\r\nb\u2028c\u0000d${"x".repeat(5000)}` }).toBody();
    expect(body.detail).toMatch(/^a b c dx+…$/);
    expect(body.detail!.length).toBe(MAX_DETAIL_LENGTH);
  });
});

describe("the action's verdict line with a detail", () => {
  const context = { repository: "octo-org/app", audience: "tokensmith", brokerUrl: "https://broker.example" };

  it("quotes the detail after the hint, before the codes", () => {
    const line = describeVerdict({ status: 403, error: "permissions_not_granted", detail: "issues: write withheld by TOKEN_PERMISSIONS (not granted)" }, context);
    expect(line).toBe(
      "tokensmith: The step's permission-<name> inputs ask for more than the broker grants octo-org/app: ask for less, or have the grant widened where the detail says (TOKEN_PERMISSIONS: the broker's operator; installation: an owner of the account must grant the App that permission; rule <name> or owner rule <name>: the trust policy's rule, in .github/tokensmith.yml or the owner's .github/tokensmith-org.yml). " +
        'The broker says: "issues: write withheld by TOKEN_PERMISSIONS (not granted)". (error: permissions_not_granted, HTTP 403 from https://broker.example)',
    );
  });

  it("cuts a long detail and escapes what could start a workflow command", () => {
    const line = describeVerdict({ status: 400, error: "invalid_permissions", detail: `\n::stop-commands::x${"y".repeat(2000)}` }, context);
    expect(line).not.toMatch(/[\r\n]/);
    expect(line).toContain('The broker says: "\\u000a::stop-commands::x');
    expect(line).toContain(`${"y".repeat(MAX_SHOWN_DETAIL - "\n::stop-commands::x".length)}…"`);
  });
});
