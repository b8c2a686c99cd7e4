// action.yml checked with GitHub's own tooling: @actions/workflow-parser's parseAction, which reads
// the file against the action schema the package ships (action-v1.0.min.json, the one GitHub's
// editor tooling uses: branding icons and colours, runs.using values, input fields).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { NoOperationTraceWriter } from "@actions/workflow-parser";
import { parseAction } from "@actions/workflow-parser/actions/action-parser";
import { ACTION_YML } from "./support/action-runner.js";

function actionErrors(content: string): string[] {
  const result = parseAction({ name: "action.yml", content }, new NoOperationTraceWriter());
  return result.context.errors.getErrors().map((error) => error.message);
}

describe("action.yml against GitHub's action schema", () => {
  it("has no errors", () => {
    expect(actionErrors(readFileSync(ACTION_YML, "utf8"))).toEqual([]);
  });

  it("the check is real: an icon outside the schema's list is an error", () => {
    const text = readFileSync(ACTION_YML, "utf8").replace(/^( {2}icon: ).*$/m, "$1key");
    expect(actionErrors(text).join("\n")).toContain("Unexpected value 'key'");
  });
});
