// The README's sandbox example (examples/sandbox.test.mjs), run as written with `node --test`:
// it imports `tokensmith/testing` through the package's own `exports` (the built module).
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { readFileSync } from "node:fs";
import { expect, it } from "@jest/globals";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const EXAMPLE = "examples/sandbox.test.mjs";

it("the README shows the example file as it is", () => {
  const readme = readFileSync(`${ROOT}README.md`, "utf8");
  expect(readme).toContain(readFileSync(`${ROOT}${EXAMPLE}`, "utf8").trim());
});

it("node --test examples/sandbox.test.mjs passes", async () => {
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, ["--test", EXAMPLE], { cwd: ROOT, env: { PATH: process.env.PATH }, timeout: 60_000 }, (error, out, err) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout: out, stderr: err });
    });
  });
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  expect(stdout).toMatch(/# pass 3/);
  expect(stdout).toMatch(/# fail 0/);
}, 70_000);
