// `npm run docs`: regenerates docs/errors.md's error tables from shared/error-codes.ts, and
// docs/action.md's tables from the action's hints and its permission inputs.
import { readFileSync, writeFileSync } from "node:fs";
import { reasonHintsMarkdown, workflowHintsMarkdown } from "../build/action/hints-markdown.js";
import { permissionInputsMarkdown } from "../build/action/permission-inputs-markdown.js";
import { errorCodesMarkdown, reasonsMarkdown, replaceSection } from "../build/shared/error-table-markdown.js";

const errorsDoc = new URL("../docs/errors.md", import.meta.url);
let errors = readFileSync(errorsDoc, "utf8");
errors = replaceSection(errors, "error-codes", errorCodesMarkdown());
errors = replaceSection(errors, "oidc-reasons", reasonsMarkdown());
writeFileSync(errorsDoc, errors);

const actionDoc = new URL("../docs/action.md", import.meta.url);
let doc = readFileSync(actionDoc, "utf8");
doc = replaceSection(doc, "workflow-hints", workflowHintsMarkdown());
doc = replaceSection(doc, "reason-hints", reasonHintsMarkdown());
doc = replaceSection(doc, "permission-inputs", permissionInputsMarkdown());
writeFileSync(actionDoc, doc);
