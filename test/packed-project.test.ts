// The packed-project check (issue 41): CI runs scripts/packed-project-test.sh on the tarball it
// packed, after the production install, and the project it copies is type-checked under strict.
// The run itself needs the npm registry (typescript, vitest), so CI runs it, not `npm test`.
import { accessSync, constants, readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";

const ROOT = new URL("../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), "utf8");

describe("examples/packed-project", () => {
  it(".ci/run runs the script on the packed tarball, after the production install from it and before removing it", () => {
    const ci = read(".ci/run").split("\n").map((line) => line.trim());
    const call = ci.indexOf('scripts/packed-project-test.sh "$pack_dir"/tokensmith-*.tgz');
    expect(call).toBeGreaterThan(ci.indexOf("npm pack"));
    expect(call).toBeGreaterThan(ci.findIndex((line) => line.startsWith("npm install --omit=dev")));
    expect(call).toBeLessThan(ci.indexOf('rm -rf "$pack_dir"'));
    accessSync(new URL("scripts/packed-project-test.sh", ROOT), constants.X_OK);
  });

  it("is a strict TypeScript project whose tests use tokensmith/testing, node:test and vitest", () => {
    const tsconfig = JSON.parse(read("examples/packed-project/tsconfig.json")) as { compilerOptions: Record<string, unknown> };
    expect(tsconfig.compilerOptions).toMatchObject({ strict: true, skipLibCheck: false });
    const project = JSON.parse(read("examples/packed-project/package.json")) as { devDependencies: Record<string, string>; scripts: Record<string, string> };
    expect(Object.keys(project.devDependencies).sort()).toEqual(["@types/node", "typescript", "vitest"]);
    expect(project.scripts["test:node"]).toMatch(/^node --test /);
    expect(project.scripts["test:vitest"]).toMatch(/^vitest run /);
    expect(read("examples/packed-project/test/node/tag-release.test.ts")).toContain('from "node:test"');
    expect(read("examples/packed-project/test/vitest/tag-release.test.ts")).toContain('from "vitest"');
    expect(read("examples/packed-project/test/release-job.ts")).toContain("/releases`, {\n    method: \"POST\"");
  });
});
