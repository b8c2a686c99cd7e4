// What an operator installs (`npm ci --omit=dev`, or the package's production dependencies) must
// run on every Node.js major the README promises, and must not carry what only the bundled action
// needs (the action ships as dist/, built by ncc from the dev install).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import semver from "semver";

const root = new URL("../", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as {
  engines: { node: string };
  dependencies: Record<string, string>;
};

/** The Node.js majors the README's set-up promises (22 and 24; 20 is past its end of life), at their first LTS releases. */
const PROMISED = ["22.11.0", "24.11.0"];

interface Tree {
  version?: string;
  path?: string;
  dependencies?: Record<string, Tree>;
}

function productionPackages(): Map<string, string> {
  const out = execFileSync("npm", ["ls", "--omit=dev", "--all", "--json", "--long"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const found = new Map<string, string>();
  const walk = (tree: Tree) => {
    for (const [name, child] of Object.entries(tree.dependencies ?? {})) {
      if (child.path && !found.has(child.path)) {
        found.set(child.path, name);
        walk(child);
      }
    }
  };
  walk(JSON.parse(out) as Tree);
  return found;
}

describe("production dependencies", () => {
  it("the package promises the Node.js majors the README names", () => {
    for (const version of PROMISED) expect(semver.satisfies(version, pkg.engines.node)).toBe(true);
  });

  it("every production package supports every promised Node.js major (no EBADENGINE on Node 22 or 24)", () => {
    const refused: string[] = [];
    const packages = productionPackages();
    expect(packages.size).toBeGreaterThan(20);
    for (const [path, name] of packages) {
      const manifest = JSON.parse(readFileSync(`${path}/package.json`, "utf8")) as { version: string; engines?: { node?: string } };
      const range = manifest.engines?.node;
      if (!range) continue;
      for (const version of PROMISED) {
        if (!semver.satisfies(version, range)) refused.push(`${name}@${manifest.version} wants node ${range}, not ${version}`);
      }
    }
    expect(refused).toEqual([]);
  });

  it("the action's toolkit is not a runtime dependency of the broker (it is bundled into dist/)", () => {
    expect(Object.keys(pkg.dependencies).filter((name) => name.startsWith("@actions/"))).toEqual([]);
  });
});
