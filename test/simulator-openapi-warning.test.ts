// Without @octokit/openapi the simulator warns once (TOKENSMITH_SIMULATOR_NO_OPENAPI,
// docs/sandbox.md#what-the-platform-answers) per process, not once per instance of its module:
// test runners evaluate a package's modules again for every test file (jest: a module registry and
// a global of its own per file, in one worker process). Both cases run in a child process against
// a copy of the built module whose only dependency, ajv, is there and @octokit/openapi is not.
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CODE = "TOKENSMITH_SIMULATOR_NO_OPENAPI";
let work: string;

beforeAll(() => {
  // work/sim/ holds the two built modules; work/node_modules/ has ajv and nothing else, so the
  // module's search for @octokit/openapi (up from work/sim/) finds none.
  work = mkdtempSync(join(tmpdir(), "tokensmith-openapi-warning-"));
  mkdirSync(join(work, "sim"));
  mkdirSync(join(work, "node_modules"));
  for (const file of ["openapi-validate.js", "package-file.js"]) copyFileSync(join(ROOT, "build/simulator", file), join(work, "sim", file));
  symlinkSync(join(ROOT, "node_modules/ajv"), join(work, "node_modules/ajv"), "dir");
  writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, args, { cwd: work, env: { PATH: process.env.PATH ?? "", HOME: work, ...env }, timeout: 60_000 }, (_error, stdout, stderr) =>
      resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

const count = (text: string): number => text.split(CODE).length - 1;

it("two instances of the module in one process (imported with two query strings): one warning", async () => {
  writeFileSync(join(work, "twice.mjs"), `
    let warned = 0;
    process.on("warning", (warning) => { if (warning.code === ${JSON.stringify(CODE)}) warned += 1; });
    const a = await import("./sim/openapi-validate.js?first");
    const b = await import("./sim/openapi-validate.js?second");
    if (a === b) throw new Error("one module instance, not two");
    for (const instance of [a, b, a, b]) if (instance.githubRestDescriptionIfInstalled() !== undefined) throw new Error("@octokit/openapi was found");
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on process.nextTick
    console.log(JSON.stringify({ warned }));
  `);
  const result = await run(["twice.mjs"]);
  expect(result.code).toBe(0);
  expect(JSON.parse(result.stdout)).toEqual({ warned: 1 });
  expect(count(result.stderr)).toBe(1);
});

it("jest, two test files in one worker, each with its own module registry and global: one warning", async () => {
  for (const name of ["a", "b"]) {
    writeFileSync(join(work, `${name}.test.mjs`), `
      import { githubRestDescriptionIfInstalled } from "./sim/openapi-validate.js";
      test("no description, the simulator runs without the body checks", () => {
        expect(githubRestDescriptionIfInstalled()).toBeUndefined();
        expect(globalThis.${name === "a" ? "fromB" : "fromA"}).toBeUndefined(); // a global of its own
        globalThis.from${name.toUpperCase()} = true;
      });
    `);
  }
  const jest = join(ROOT, "node_modules/jest/bin/jest.js");
  const result = await run([jest, "--runInBand", "--ci", "--no-cache", "--no-watchman", "--rootDir", work, "--testMatch", "**/*.test.mjs", "--transform", "{}"], {
    NODE_OPTIONS: "--experimental-vm-modules",
  });
  expect(result.stderr).toContain("Tests:       2 passed, 2 total");
  expect(result.code).toBe(0);
  expect(count(result.stderr)).toBe(1);
});
