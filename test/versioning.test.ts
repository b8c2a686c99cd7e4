// One version across package.json, CHANGELOG.md and the release (docs/versioning.md), the
// changelog script the release workflow runs (scripts/changelog.js, on copies of the changelog),
// and the files people look for: SECURITY.md, CONTRIBUTING.md, a commented CODEOWNERS.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";

const root = new URL("../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");
const script = new URL("scripts/changelog.js", root).pathname;
const scratch = mkdtempSync(join(tmpdir(), "tokensmith-changelog-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs scripts/changelog.js on a copy holding `text`; the copy's text afterwards. */
function changelog(text: string, ...args: string[]) {
  const file = join(scratch, `CHANGELOG-${Math.random().toString(36).slice(2)}.md`);
  writeFileSync(file, text);
  const run = spawnSync(process.execPath, [script, ...args], { env: { ...process.env, CHANGELOG_FILE: file }, encoding: "utf8" });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr, after: readFileSync(file, "utf8") };
}

const SAMPLE = `# Changelog

## [Unreleased]

### Added

- A new input.

## [1.2.3] - 2026-01-02

### Fixed

- A fix.
`;

describe("one version", () => {
  it("package.json's version is CHANGELOG.md's newest entry", () => {
    const pkg = JSON.parse(read("package.json")) as { version: string };
    const newest = changelog(read("CHANGELOG.md"), "newest");
    expect(newest.status).toBe(0);
    expect(newest.stdout.trim()).toBe(pkg.version);
  });

  it("CHANGELOG.md keeps Keep a Changelog's shape: Unreleased first, dated versions, newest first", () => {
    const text = read("CHANGELOG.md");
    expect(text.startsWith("# Changelog\n")).toBe(true);
    expect(text).toContain("https://keepachangelog.com/en/1.1.0/");
    const headings = [...text.matchAll(/^## \[([^\]]+)\](.*)$/gm)].map((match) => [match[1], match[2]] as const);
    expect(headings[0]).toEqual(["Unreleased", ""]);
    const versions = headings.slice(1);
    expect(versions.length).toBeGreaterThan(0);
    for (const [version, rest] of versions) {
      expect(version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(rest).toMatch(/^ - \d{4}-\d{2}-\d{2}$/);
    }
    const numbers = versions.map(([version]) => version!.split(".").map(Number));
    const sorted = [...numbers].sort((a, b) => b[0]! - a[0]! || b[1]! - a[1]! || b[2]! - a[2]!);
    expect(numbers).toEqual(sorted);
  });

  it("the release workflow refuses a tag that is not package.json's and the changelog's version", () => {
    const release = read(".github/workflows/release.yml");
    expect(release).toContain(`test "$(node -p 'require("./package.json").version')" = "$version"`);
    expect(release).toContain(`test "$(node scripts/changelog.js newest)" = "$version"`);
    expect(release).toContain(`node scripts/changelog.js notes "$VERSION" > release-notes.md`);
  });
});

describe("scripts/changelog.js", () => {
  it("release: Unreleased's entries move under the version and date; Unreleased stays, empty", () => {
    const run = changelog(SAMPLE, "release", "1.3.0", "2026-02-03");
    expect(run.status).toBe(0);
    expect(run.after).toBe(`# Changelog

## [Unreleased]

## [1.3.0] - 2026-02-03

### Added

- A new input.

## [1.2.3] - 2026-01-02

### Fixed

- A fix.
`);
    expect(changelog(run.after, "newest").stdout).toBe("1.3.0\n");
  });

  it("notes: the version's section, without its heading", () => {
    expect(changelog(SAMPLE, "notes", "1.2.3").stdout).toBe("### Fixed\n\n- A fix.\n");
  });

  it.each([
    [["release", "1.3"], "version must be X.Y.Z"],
    [["release", "1.3.0; rm -rf /"], "version must be X.Y.Z"],
    [["release", "1.2.3", "2026-02-03"], "1.2.3 is already in CHANGELOG.md"],
    [["release", "1.3.0", "yesterday"], "date must be YYYY-MM-DD"],
    [["notes", "9.9.9"], "no section for 9.9.9"],
    [["bump"], "usage:"],
  ])("%j is refused: %s, the file untouched", (args, message) => {
    const run = changelog(SAMPLE, ...args);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(message);
    expect(run.after).toBe(SAMPLE);
  });

  it("release with nothing under Unreleased is refused", () => {
    const empty = SAMPLE.replace("### Added\n\n- A new input.\n\n", "");
    const run = changelog(empty, "release", "1.3.0", "2026-02-03");
    expect([run.status, run.stderr.trim()]).toEqual([1, "changelog: the Unreleased section is empty: nothing to release"]);
  });
});

describe("the files people look for", () => {
  it("docs/versioning.md states the API's stability promise as the semver policy", () => {
    const policy = read("docs/versioning.md");
    for (const phrase of ["Error codes", "`reason` words", "append-only", "Patch", "Minor", "Major", "Cutting a release", "In a fork"]) {
      expect(policy).toContain(phrase);
    }
    expect(policy).toContain("shared/error-codes.ts");
  });

  it("SECURITY.md says how to report, what is supported, and links the threat model", () => {
    const security = read("SECURITY.md");
    expect(security).toContain("](docs/security.md)");
    expect(security).toMatch(/## Reporting a vulnerability/);
    expect(security).toMatch(/## Supported versions/);
  });

  it("CONTRIBUTING.md: set-up in two commands, the simulator, the bench, cutting a release", () => {
    const contributing = read("CONTRIBUTING.md");
    expect(contributing).toContain("```sh\nnpm ci\nnpm test\n```");
    for (const heading of ["## The simulator", "## The bench", "## Cutting a release"]) expect(contributing).toContain(heading);
    expect(contributing).toContain("npm run bench");
  });

  it("CODEOWNERS is an example only: every line a comment", () => {
    const lines = read(".github/CODEOWNERS").split("\n").filter((line) => line.trim() !== "");
    expect(lines.every((line) => line.startsWith("#"))).toBe(true);
  });

  it("issue and pull-request templates exist", () => {
    for (const path of [".github/ISSUE_TEMPLATE/bug_report.yml", ".github/ISSUE_TEMPLATE/feature_request.yml", ".github/ISSUE_TEMPLATE/config.yml", ".github/pull_request_template.md"]) {
      expect(read(path).length).toBeGreaterThan(0);
    }
  });
});
