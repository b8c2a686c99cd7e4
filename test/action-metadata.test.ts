// action.yml checked with GitHub's own tooling: @actions/workflow-parser's parseAction, which reads
// the file against the action schema the package ships (action-v1.0.min.json, the one GitHub's
// editor tooling uses: branding icons and colours, runs.using values, input fields).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { NoOperationTraceWriter } from "@actions/workflow-parser";
import { parseAction } from "@actions/workflow-parser/actions/action-parser";
import { ACTION_INPUT_DEFAULTS } from "../server/sandbox/run-bundled-action.js";
import { ACTION_YML, actionInputDefaults } from "./support/action-runner.js";

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

  it("the sandbox fills in exactly action.yml's input defaults (its runner ships without action.yml)", () => {
    expect(ACTION_INPUT_DEFAULTS).toEqual(actionInputDefaults());
  });
});

describe("what the README and the repository say about the action", () => {
  const root = new URL("../", import.meta.url);
  const readme = readFileSync(new URL("README.md", root), "utf8");

  it("names the runner version node24 needs (Actions Runner 2.327.1)", () => {
    expect(readFileSync(ACTION_YML, "utf8")).toMatch(/^ {2}using: node24$/m);
    expect(readme).toContain("Actions Runner 2.327.1 or\nlater");
  });

  it("names every output of action.yml in its Outputs: list", () => {
    const yml = readFileSync(ACTION_YML, "utf8");
    const block = /^outputs:\n((?: {2,}.*\n)*)/m.exec(yml)![1]!;
    const outputs = [...block.matchAll(/^ {2}([a-z][a-z0-9-]*):$/gm)].map((m) => m[1]!);
    expect(outputs).toEqual(["token", "expires-at", "repository", "repositories", "installation-id", "app-slug", "permissions"]);
    const list = /Outputs: ([^(]*)\(/.exec(readme)![1]!.replace(/\s+/g, " ");
    expect([...list.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]).sort()).toEqual([...outputs].sort());
    expect(readme.split("\n").length).toBeLessThanOrEqual(250);
  });

  it("uses actions/checkout at its current major (v6: v4 runs on the deprecated Node 20)", () => {
    expect(readme.match(/actions\/checkout@v\d+/g)).toEqual(["actions/checkout@v6"]);
  });

  it("has the MIT LICENSE that package.json names", () => {
    const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { license?: string };
    expect(pkg.license).toBe("MIT");
    const license = readFileSync(new URL("LICENSE", root), "utf8");
    expect(license.split("\n")[0]).toBe("MIT License");
    expect(license).toContain("Copyright (c) 2026 the tokensmith authors");
  });
});
