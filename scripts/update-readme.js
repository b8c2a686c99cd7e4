// `npm run docs`: regenerates docs/errors.md's error tables from shared/error-codes.ts.
import { readFileSync, writeFileSync } from "node:fs";
import { errorCodesMarkdown, reasonsMarkdown, replaceSection } from "../build/shared/error-table-markdown.js";

const path = new URL("../docs/errors.md", import.meta.url);
let errors = readFileSync(path, "utf8");
errors = replaceSection(errors, "error-codes", errorCodesMarkdown());
errors = replaceSection(errors, "oidc-reasons", reasonsMarkdown());
writeFileSync(path, errors);
