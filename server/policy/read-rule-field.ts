import { BrokerError } from "../../shared/broker-error.js";
import { own } from "../http/fields.js";

const RULE_NAME = /^[a-z0-9-]{1,64}$/;

/**
 * The /token body's optional `rule` (action input `policy-rule`): the policy rule the job asks for
 * by name, as the schema spells names. Absent, null or empty → the first rule that holds.
 */
export function readRuleField(body: Record<string, unknown>): string | undefined {
  const value = own(body, "rule");
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string" || !RULE_NAME.test(value)) throw new BrokerError("invalid_request", { detail: "rule is not a rule name ([a-z0-9-]+)" });
  return value;
}
