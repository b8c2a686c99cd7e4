// CHANGELOG.md (Keep a Changelog 1.1.0) for the release workflow, without dependencies so a fresh
// checkout runs it before `npm ci`:
//   node scripts/changelog.js release X.Y.Z [YYYY-MM-DD]  the Unreleased section becomes X.Y.Z
//   node scripts/changelog.js notes X.Y.Z                 prints X.Y.Z's section (the release notes)
//   node scripts/changelog.js newest                      prints the newest released version
// Exit 1 with one line on stderr when the changelog does not allow it (docs/versioning.md).
import { readFileSync, writeFileSync } from "node:fs";

const VERSION = /^\d+\.\d+\.\d+$/;
const HEADING = /^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$/;

/** The level-2 sections in order: name ("Unreleased" or a version), date, body lines. */
function sections(text) {
  const lines = text.split("\n");
  const found = [];
  lines.forEach((line, index) => {
    const match = HEADING.exec(line);
    if (match) found.push({ name: match[1], date: match[2], start: index });
  });
  return found.map((section, i) => {
    // A section ends at the next heading, or at the link references that close the file.
    const next = found[i + 1]?.start ?? lines.findIndex((line, index) => index > section.start && /^\[[^\]]+\]: /.test(line));
    const end = next === -1 ? lines.length : next;
    return { ...section, end, body: lines.slice(section.start + 1, end).join("\n").trim() };
  });
}

function fail(message) {
  process.stderr.write(`changelog: ${message}\n`);
  process.exit(1);
}

function newest(text) {
  const released = sections(text).find((section) => section.name !== "Unreleased");
  if (!released) fail("no released version in CHANGELOG.md");
  return released.name;
}

function notes(text, version) {
  const section = sections(text).find((candidate) => candidate.name === version);
  if (!section) fail(`no section for ${version} in CHANGELOG.md`);
  if (section.body === "") fail(`the section for ${version} is empty`);
  return section.body;
}

/** Unreleased's entries move under "## [version] - date"; Unreleased stays, empty, for what comes next. */
function release(text, version, date) {
  if (!VERSION.test(version)) fail(`version must be X.Y.Z, got ${JSON.stringify(version)}`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) fail(`date must be YYYY-MM-DD, got ${JSON.stringify(date)}`);
  const all = sections(text);
  if (all.some((section) => section.name === version)) fail(`${version} is already in CHANGELOG.md`);
  const unreleased = all.find((section) => section.name === "Unreleased");
  if (!unreleased) fail("CHANGELOG.md has no ## [Unreleased] section");
  if (unreleased.body === "") fail("the Unreleased section is empty: nothing to release");
  const lines = text.split("\n");
  const head = lines.slice(0, unreleased.start + 1);
  const tail = lines.slice(unreleased.end);
  return [...head, "", `## [${version}] - ${date}`, "", unreleased.body, "", ...tail].join("\n");
}

const [command, version, date = new Date().toISOString().slice(0, 10)] = process.argv.slice(2);
// CHANGELOG_FILE: another file (the tests' copies); by default the repository's own.
const path = process.env.CHANGELOG_FILE || new URL("../CHANGELOG.md", import.meta.url);
const text = readFileSync(path, "utf8");
if (command === "newest") process.stdout.write(`${newest(text)}\n`);
else if (command === "notes") process.stdout.write(`${notes(text, version ?? "")}\n`);
else if (command === "release") writeFileSync(path, release(text, version ?? "", date));
else fail("usage: node scripts/changelog.js release X.Y.Z [YYYY-MM-DD] | notes X.Y.Z | newest");
