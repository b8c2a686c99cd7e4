// The README is the newcomer's first screen: short, with the two commands; the reference lives in
// docs/, whose error tables are generated from shared/error-codes.ts. Every relative link in the
// README and docs/ must lead to a file that exists, and to a heading of it when it names one, and
// every test file they cite as proof (`test/<name>.test.ts`) must exist.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { errorCodesMarkdown, reasonsMarkdown, replaceSection } from "../shared/error-table-markdown.js";
import { headingAnchors, relativeLinks } from "./support/markdown-links.js";

const ROOT = new URL("../", import.meta.url);
const readme = readFileSync(new URL("README.md", ROOT), "utf8");
const DOCUMENTS = ["README.md", ...readdirSync(new URL("docs/", ROOT)).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];

describe("README", () => {
  it("gives the two set-up commands", () => {
    expect(readme).toContain("npm ci && npm start");
    expect(readme).toContain("npm test");
  });

  it("stays under 250 lines, and indexes every document in docs/", () => {
    expect(readme.split("\n").length).toBeLessThan(250);
    for (const document of DOCUMENTS.filter((name) => name !== "README.md")) expect(readme).toContain(`](${document})`);
  });
});

describe("docs/errors.md", () => {
  it("has the error-code and reason tables as the shared table renders them (run `npm run docs`)", () => {
    const errors = readFileSync(new URL("docs/errors.md", ROOT), "utf8");
    const regenerated = replaceSection(replaceSection(errors, "error-codes", errorCodesMarkdown()), "oidc-reasons", reasonsMarkdown());
    expect(errors).toBe(regenerated);
  });
});

describe("links in README.md and docs/*.md", () => {
  it.each(DOCUMENTS)("every relative link in %s leads to an existing file, and heading", (document) => {
    const from = new URL(document, ROOT);
    const broken: string[] = [];
    const links = relativeLinks(readFileSync(from, "utf8"));
    for (const link of links) {
      const [path, anchor] = link.split("#") as [string, string | undefined];
      const target = path === "" ? from : new URL(path, from);
      let exists = true;
      try {
        statSync(target);
      } catch {
        exists = false;
      }
      if (!exists) broken.push(`${link}: no such file`);
      else if (anchor !== undefined && target.pathname.endsWith(".md") && !headingAnchors(readFileSync(target, "utf8")).has(anchor)) broken.push(`${link}: no such heading`);
    }
    expect(broken).toEqual([]);
    if (document === "README.md") expect(links.length).toBeGreaterThanOrEqual(10);
  });
});

/** The files under test/ a document names (in code spans or prose): `test/<path>.ts` or `.js`. */
function citedTestFiles(text: string): string[] {
  return [...text.matchAll(/\btest\/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:ts|js)\b/g)].map((match) => match[0]);
}

describe("test files cited in README.md and docs/*.md", () => {
  it("finds a cited test file in a code span, in prose and under test/support", () => {
    expect(citedTestFiles("**Tests.** `test/a-b.test.ts` and test/support/c.ts; not contest/d.ts nor test/.")).toEqual(["test/a-b.test.ts", "test/support/c.ts"]);
  });

  it("every one exists", () => {
    const missing: string[] = [];
    let count = 0;
    for (const document of DOCUMENTS) {
      for (const cited of citedTestFiles(readFileSync(new URL(document, ROOT), "utf8"))) {
        count += 1;
        try {
          statSync(new URL(cited, ROOT));
        } catch {
          missing.push(`${document}: ${cited}`);
        }
      }
    }
    expect(missing).toEqual([]);
    expect(count).toBeGreaterThan(50);
  });
});
