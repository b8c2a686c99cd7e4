// Issue 25's documentation: docs/action.md carries the hints the action prints (generated from
// action/hints.ts), the time bound the action keeps and what it refuses; the README's workflow
// section shows the app-slug git-author example and links the page.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { reasonHintsMarkdown, workflowHintsMarkdown } from "../action/hints-markdown.js";
import { DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS } from "../action/inputs.js";
import { MAX_TOKEN_LENGTH } from "../action/check-answer.js";
import { MAX_BODY_BYTES } from "../action/http.js";
import { REFUSED_REVOKE_TIMEOUT_MS } from "../action/run.js";
import { actionInputDefaults } from "./support/action-runner.js";

const root = new URL("../", import.meta.url);
const doc = readFileSync(new URL("docs/action.md", root), "utf8");
const readme = readFileSync(new URL("README.md", root), "utf8");

const section = (text: string, name: string) => {
  const start = `<!-- ${name}:start -->\n`;
  const from = text.indexOf(start);
  const to = text.indexOf(`\n<!-- ${name}:end -->`);
  expect(from).toBeGreaterThanOrEqual(0);
  return text.slice(from + start.length, to);
};

describe("docs/action.md", () => {
  it("has the hints of every error code and reason word, as action/hints.ts words them", () => {
    expect(section(doc, "workflow-hints")).toBe(workflowHintsMarkdown());
    expect(section(doc, "reason-hints")).toBe(reasonHintsMarkdown());
  });

  it("states the bound the action keeps, with action.yml's default, and the limits the checks use", () => {
    expect(actionInputDefaults()["timeout-seconds"]).toBe(String(DEFAULT_TIMEOUT_SECONDS));
    expect(doc).toContain(`| \`timeout-seconds\` | no | \`${DEFAULT_TIMEOUT_SECONDS}\` | The step's bound on its own time, 1 to ${MAX_TIMEOUT_SECONDS}`);
    expect(doc).toContain(`The step ends within \`timeout-seconds\` (default ${DEFAULT_TIMEOUT_SECONDS} s)`);
    expect(doc).toContain(`at most ${REFUSED_REVOKE_TIMEOUT_MS / 1000} s more`);
    expect(doc).toContain(`over ${MAX_TOKEN_LENGTH} characters`);
    expect(doc).toContain(`over ${MAX_BODY_BYTES / 1024} KiB`);
  });
});

describe("README's Use it in a workflow", () => {
  const workflow = readme.slice(readme.indexOf("## Use it in a workflow"), readme.indexOf("## Test your release workflow against a sandbox"));

  it("sets the git author from the app-slug output, as <slug>[bot] with the bot's user id", () => {
    expect(workflow).toContain('APP_SLUG: ${{ steps.app-token.outputs.app-slug }}');
    expect(workflow).toContain('user_id="$(gh api "/users/${APP_SLUG}[bot]" --jq .id)"');
    expect(workflow).toContain('git config user.name "${APP_SLUG}[bot]"');
    expect(workflow).toContain('git config user.email "${user_id}+${APP_SLUG}[bot]@users.noreply.github.com"');
  });

  it("names the outputs and the time bound, and links docs/action.md", () => {
    expect(workflow.replace(/\s+/g, " ")).toContain("`token`, `expires-at`, `repository`, `repositories`, `installation-id`, `app-slug`, `permissions`");
    expect(workflow).toContain(`within \`timeout-seconds\` (default ${DEFAULT_TIMEOUT_SECONDS} s)`);
    expect(workflow).toContain("[docs/action.md](docs/action.md)");
  });
});
