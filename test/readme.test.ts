// The README's error tables are generated from shared/error-codes.ts; this keeps them in step.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { errorCodesMarkdown, reasonsMarkdown, replaceSection } from "../shared/error-table-markdown.js";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

describe("README", () => {
  it("has the error-code and reason tables as the shared table renders them (run `npm run docs`)", () => {
    const regenerated = replaceSection(replaceSection(readme, "error-codes", errorCodesMarkdown()), "oidc-reasons", reasonsMarkdown());
    expect(readme).toBe(regenerated);
  });

  it("gives the two set-up commands", () => {
    expect(readme).toContain("npm ci && npm start");
    expect(readme).toContain("npm test");
  });
});
