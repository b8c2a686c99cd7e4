// docs/sandbox.md in step with tokensmith/testing (issue 41, items 4 and 6): the names the guide
// documents are the names the package exports, read from the declarations by TypeScript's own
// checker — every export, every member of `Sandbox`, the action's outputs in `ActionOutputs` (and
// action.yml), every claim of `GitHubOidcClaims` in the default-claims table.
// The declarations are the built ones (build/server/sandbox/index.d.ts, what `tokensmith/testing`
// gives its users through package.json's `exports`; `npm test` builds first): the same names as
// from the sources, for a fifth of the files (about 200, not 1,000: the sources reach the whole
// broker and the platform's full type packages).
import { readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "@jest/globals";
import ts from "typescript-api";
import { parse } from "yaml";

const ROOT = new URL("../", import.meta.url);
const guide = readFileSync(new URL("docs/sandbox.md", ROOT), "utf8");

let exported: string[] = [];
const members = new Map<string, string[]>();
beforeAll(() => {
  const entry = fileURLToPath(new URL("build/server/sandbox/index.d.ts", ROOT));
  // The project's own lib (tsconfig.json: ES2023, no DOM).
  const program = ts.createProgram([entry], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, lib: ["lib.es2023.d.ts"], strict: true, skipLibCheck: true, noEmit: true, types: ["node"] });
  // A build older than its sources would check the names of old declarations: refused, not read.
  const build = fileURLToPath(new URL("build/", ROOT));
  const stale = program
    .getSourceFiles()
    .map((file) => file.fileName)
    .filter((file) => file.startsWith(build))
    .filter((file) => statSync(`${fileURLToPath(ROOT)}${file.slice(build.length).replace(/\.d\.ts$/, ".ts")}`).mtimeMs > statSync(file).mtimeMs);
  if (stale.length > 0) throw new Error(`build/ is older than its sources (${stale.join(", ")}): run npx tsc -p tsconfig.build.json`);
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  const exports = checker.getExportsOfModule(module);
  exported = exports.map((symbol) => symbol.getName()).sort();
  for (const name of ["Sandbox", "ActionOutputs", "GitHubOidcClaims"]) {
    const symbol = exports.find((s) => s.getName() === name)!;
    const type = checker.getDeclaredTypeOfSymbol(checker.getAliasedSymbol(symbol));
    members.set(name, checker.getPropertiesOfType(type).map((p) => p.getName()).filter((n) => !n.startsWith("__@")));
  }
}, 60_000);

/** The text of the guide from `marker` to the next heading. */
const section = (marker: string) => {
  const start = guide.indexOf(marker);
  expect(start).toBeGreaterThan(-1);
  const end = guide.indexOf("\n## ", start);
  return guide.slice(start, end === -1 ? undefined : end);
};
/** The names in the first column of a Markdown table: each code span, up to its `(`. */
const firstColumnNames = (table: string) =>
  table.split("\n").filter((line) => line.startsWith("| `")).flatMap((line) => [...line.split(" | ")[0]!.matchAll(/`([^`(]+)[^`]*`/g)].map((m) => m[1]!.trim()));

describe("docs/sandbox.md documents tokensmith/testing as exported", () => {
  it("every export is in the exports table, and the table names nothing that is not exported", () => {
    const documented = firstColumnNames(section("<!-- exports:")).sort();
    expect(exported).toContain("TokenResponse");
    expect(documented).toEqual(exported);
  });

  it("every member of Sandbox is in the members table", () => {
    const table = guide.slice(guide.indexOf("| Member | What it is |"), guide.indexOf("## Faults"));
    const documented = new Set(firstColumnNames(table).flatMap((cell) => cell.split(/,\s*/)));
    const missing = members.get("Sandbox")!.filter((name) => !documented.has(name));
    expect(missing).toEqual([]);
    expect(table).toContain("[Symbol.asyncDispose]");
  });

  it("ActionOutputs has action.yml's outputs, and runAction's row lists all of them", () => {
    const outputs = Object.keys((parse(readFileSync(new URL("action.yml", ROOT), "utf8")) as { outputs: Record<string, unknown> }).outputs).sort();
    expect(outputs).toHaveLength(7);
    expect([...members.get("ActionOutputs")!].sort()).toEqual(outputs);
    const row = guide.split("\n").find((line) => line.startsWith("| `runAction("))!;
    for (const output of outputs) expect(row).toContain(`\`${output}\``);
  });

  it("every claim of GitHubOidcClaims has its default in the claims table", () => {
    const documented = new Set(firstColumnNames(section("<!-- default claims:")).flatMap((cell) => cell.split(/,\s*/)));
    const claims = members.get("GitHubOidcClaims")!;
    expect(claims).toContain("event_name");
    expect(claims.filter((claim) => !documented.has(claim))).toEqual([]);
    expect([...documented].filter((claim) => !claims.includes(claim))).toEqual([]);
  });
});
