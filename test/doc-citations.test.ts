// The repository stands on its own (docs/design.md): code cites documents that a clone has, by
// file and heading, and every such citation resolves.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "@jest/globals";
import ts from "typescript-api";
import { headingAnchors } from "./support/markdown-links.js";

const ROOT = new URL("../", import.meta.url).pathname;
const FOLDERS = ["server", "action", "shared", "simulator", "bench", "scripts", "test"];

function sources(folder: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) found.push(...sources(path));
    else if (/\.(ts|js|mjs)$/.test(name) && !name.endsWith(".d.ts")) found.push(path);
  }
  return found;
}

const files = FOLDERS.flatMap((folder) => sources(join(ROOT, folder)));

// A source file's comments (line comments to the line's end, block comments whole): where citations live (strings are data).
function comments(text: string): string {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  const found: string[] = [];
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) found.push(scanner.getTokenText());
    // A `/` that starts a regular expression: read it as one, or its text would look like code.
    if (kind === ts.SyntaxKind.SlashToken || kind === ts.SyntaxKind.SlashEqualsToken) scanner.reScanSlashToken();
  }
  return found.join("\n");
}

/** `docs/<file>.md` or `docs/<file>.md#<anchor>` cited in a source file's comments. */
function citations(text: string): string[] {
  return [...comments(text).matchAll(/\bdocs\/([a-z0-9-]+\.md)(#[a-z0-9_-]+)?/g)].map((match) => `docs/${match[1]}${match[2] ?? ""}`);
}

describe("citations in the code", () => {
  it("finds a citation with and without a heading, in comments only", () => {
    expect(citations("// see docs/policies.md#other-repositories\n/* and docs/api.md. */\nconst path = \"docs/hello.md\";")).toEqual(["docs/policies.md#other-repositories", "docs/api.md"]);
  });

  it("cite only documents in the repository (no brief or contract kept elsewhere)", () => {
    // Built from pieces, so that this file does not match itself.
    const outside = new RegExp(["DESIGN", "\\.md|\\.\\./shared/", "spec|STYLE", "\\.md"].join(""));
    const offenders = files.filter((file) => outside.test(readFileSync(file, "utf8"))).map((file) => relative(ROOT, file));
    expect(offenders).toEqual([]);
  });

  it("lead to an existing document and heading", () => {
    const anchors = new Map<string, Set<string>>();
    const broken: string[] = [];
    let count = 0;
    for (const file of files) {
      for (const cited of citations(readFileSync(file, "utf8"))) {
        count += 1;
        const [path, anchor] = cited.split("#") as [string, string | undefined];
        let exists = true;
        try {
          statSync(join(ROOT, path));
        } catch {
          exists = false;
        }
        if (!exists) {
          broken.push(`${relative(ROOT, file)}: ${cited}: no such file`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!anchors.has(path)) anchors.set(path, headingAnchors(readFileSync(join(ROOT, path), "utf8")));
        if (!anchors.get(path)!.has(anchor)) broken.push(`${relative(ROOT, file)}: ${cited}: no such heading`);
      }
    }
    expect(broken).toEqual([]);
    expect(count).toBeGreaterThan(20);
  });
});
