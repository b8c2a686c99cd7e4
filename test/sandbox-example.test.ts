// The sandbox guide's example (docs/sandbox.md: examples/sandbox.test.mjs), run as written with `node --test`:
// it imports `tokensmith/testing` through the package's own `exports` (the built module).
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "@jest/globals";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const EXAMPLE = "examples/sandbox.test.mjs";

it("the sandbox guide (docs/sandbox.md, linked from the README) shows the example file as it is", () => {
  expect(readFileSync(`${ROOT}README.md`, "utf8")).toContain("(docs/sandbox.md)");
  const guide = readFileSync(`${ROOT}docs/sandbox.md`, "utf8");
  expect(guide).toContain(readFileSync(`${ROOT}${EXAMPLE}`, "utf8").trim());
});

it("node --test examples/sandbox.test.mjs passes", async () => {
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    // TAP whatever the Node version (Node 24's default reporter on a pipe is "spec").
    execFile(process.execPath, ["--test", "--test-reporter=tap", EXAMPLE], { cwd: ROOT, env: { PATH: process.env.PATH }, timeout: 60_000 }, (error, out, err) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout: out, stderr: err });
    });
  });
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  expect(stdout).toMatch(/# pass 3/);
  expect(stdout).toMatch(/# fail 0/);
}, 70_000);

/** Type-checks `sources` (file name → text) in one program as a TypeScript user's tests would be (strict, NodeNext), importing `tokensmith/testing`. */
async function typecheck(sources: Record<string, string>): Promise<{ code: number; output: string }> {
  // Inside the package, so `tokensmith/testing` resolves through its own `exports` (the built .d.ts).
  const dir = mkdtempSync(join(ROOT, ".typecheck-"));
  try {
    for (const [name, source] of Object.entries(sources)) writeFileSync(join(dir, name), source);
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", strict: true, noEmit: true, types: ["node"], skipLibCheck: true }, files: Object.keys(sources) }));
    return await new Promise((resolve) => {
      execFile(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", dir], { cwd: dir, timeout: 60_000 }, (error, out, err) => {
        resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, output: `${out}${err}` });
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// One program for the good use and the wrong one (one tsc start and one read of the declarations
// instead of two, 1.4 s of CPU): its output must be the wrong file's one error, and nothing about the good file.
it("tokensmith/testing ships its types: a TypeScript test of the README's calls type-checks, and a wrong use does not", async () => {
  const { code, output } = await typecheck({
    "consumer.test.ts": `import { startSandbox, type Sandbox, type ActionRun } from "tokensmith/testing";
const sandbox: Sandbox = await startSandbox();
const run: ActionRun = await sandbox.runAction({ job: { repository: "octo-org/app", ref: "refs/tags/v1.2.0" } });
const code: number | null = run.exitCode;
const url: string = sandbox.brokerUrl;
console.log(code, url, run.outputs.token, sandbox.platform.mints.at(-1)?.repositories);
await sandbox.close();
`,
    "wrong.test.ts": `import { startSandbox } from "tokensmith/testing";
const sandbox = await startSandbox();
const port: number = sandbox.brokerUrl;
console.log(port);
`,
  });
  expect(code).not.toBe(0);
  expect(output.trim().split("\n")).toEqual([expect.stringMatching(/^wrong\.test\.ts\(3,\d+\): error TS2322: /)]);
}, 120_000);
