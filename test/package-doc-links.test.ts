// The installed package's docs (issue 41, item 6): every relative link in README.md and docs/
// leads to a file `npm pack` ships, so nothing in node_modules/tokensmith points at a file only the
// repository has (examples/, simulator/, CHANGELOG.md: those are named, not linked).
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "@jest/globals";
import { linksOutsidePackage } from "./support/markdown-links.js";

const ROOT = new URL("../", import.meta.url);
const DOCUMENTS = ["README.md", ...readdirSync(new URL("docs/", ROOT)).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];

/** What `npm publish` would ship (npm's own rules: `files`, plus what npm always adds). */
async function packedFiles(): Promise<string[]> {
  const { stdout } = await promisify(execFile)("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  return (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((file) => file.path);
}

describe("links in the packed package's docs", () => {
  it("a link to a file the package does not ship is found (the check can fail)", () => {
    const shipped = ["README.md", "docs/sandbox.md", "docs/api.md", "build/simulator/index.js"];
    const text = "[api](api.md#post-token) [home](../README.md) [ex](../examples/sandbox.test.mjs) [sim](../simulator/) [built](../build/simulator/) [web](https://example.com/x.md) [here](#faults)";
    expect(linksOutsidePackage("docs/sandbox.md", text, shipped)).toEqual(["../examples/sandbox.test.mjs", "../simulator/"]);
    expect(linksOutsidePackage("README.md", "[c](CHANGELOG.md) [s](docs/sandbox.md) [w](examples/workflows/)", shipped)).toEqual(["CHANGELOG.md", "examples/workflows/"]);
  });

  it("every relative link in README.md and docs/ leads to a file npm pack ships", async () => {
    const shipped = await packedFiles();
    expect(shipped).toEqual(expect.arrayContaining(["README.md", "docs/sandbox.md", "package.json"]));
    const outside = DOCUMENTS.flatMap((document) => linksOutsidePackage(document, readFileSync(new URL(document, ROOT), "utf8"), shipped).map((link) => `${document}: ${link}`));
    expect(outside).toEqual([]);
  }, 60_000);
});
