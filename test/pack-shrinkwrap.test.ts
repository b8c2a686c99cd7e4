// The published package's npm-shrinkwrap.json (issue 40, item 7): scripts/pack-shrinkwrap.js (the
// prepack step) run as a child process writes one that pins every package of package-lock.json at
// its version; the package ships it; the publish allow-list of .ci/run lets it through; and the
// checkout's own lock file is left as it was. (.ci/run also installs the packed package from it.)
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "@jest/globals";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
type Lock = { lockfileVersion: number; packages: Record<string, { version?: string; dev?: boolean }> };

it("scripts/pack-shrinkwrap.js writes an npm-shrinkwrap.json with every locked package at its locked version; the package ships it", async () => {
  const out = mkdtempSync(join(tmpdir(), "tokensmith-shrinkwrap-test-"));
  const lockBefore = readFileSync(join(ROOT, "package-lock.json"), "utf8");
  try {
    const stderr = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [join(ROOT, "scripts/pack-shrinkwrap.js"), "--out", out], { timeout: 60_000 }, (error, _stdout, err) => (error ? reject(new Error(err)) : resolve(err))),
    );
    const lock = JSON.parse(lockBefore) as Lock;
    const shrinkwrap = JSON.parse(readFileSync(join(out, "npm-shrinkwrap.json"), "utf8")) as Lock;
    expect(shrinkwrap.lockfileVersion).toBe(lock.lockfileVersion);
    const versions = (file: Lock) => Object.fromEntries(Object.entries(file.packages).map(([path, entry]) => [path, entry.version]));
    expect(versions(shrinkwrap)).toEqual(versions(lock));
    // Development dependencies stay marked, so `npm install --omit=dev` leaves them out.
    expect(shrinkwrap.packages["node_modules/jest"]?.dev).toBe(true);
    expect(shrinkwrap.packages["node_modules/express"]?.dev).toBeUndefined();
    expect(stderr).toContain(`${Object.keys(lock.packages).length - 1} packages pinned`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  // The checkout's lock is untouched (npm shrinkwrap ran on a scratch copy).
  expect(readFileSync(join(ROOT, "package-lock.json"), "utf8")).toBe(lockBefore);

  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { files: string[]; scripts: Record<string, string> };
  expect(pkg.files).toContain("npm-shrinkwrap.json");
  expect(pkg.scripts.prepack).toContain("node scripts/pack-shrinkwrap.js");
  expect(pkg.scripts.postpack).toBe("node scripts/pack-shrinkwrap.js --remove");
  // .ci/run's publish allow-list lets it through.
  const ci = readFileSync(join(ROOT, ".ci/run"), "utf8");
  const allowed = new RegExp(/const allowed = \/(.*)\/;/.exec(ci)![1]!);
  expect(allowed.test("npm-shrinkwrap.json")).toBe(true);
  expect(allowed.test("test/pack-shrinkwrap.test.ts")).toBe(false);
  expect(readFileSync(join(ROOT, ".gitignore"), "utf8")).toMatch(/^npm-shrinkwrap\.json$/m);
});
