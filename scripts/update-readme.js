// `npm run docs`: regenerates README.md's error tables from shared/error-codes.ts.
import { readFileSync, writeFileSync } from "node:fs";
import { errorCodesMarkdown, reasonsMarkdown, replaceSection } from "../build/shared/error-table-markdown.js";

const path = new URL("../README.md", import.meta.url);
let readme = readFileSync(path, "utf8");
readme = replaceSection(readme, "error-codes", errorCodesMarkdown());
readme = replaceSection(readme, "oidc-reasons", reasonsMarkdown());
writeFileSync(path, readme);
