// The published package's npm-shrinkwrap.json (prepack; postpack removes it): package-lock.json
// turned into a shrinkwrap by `npm shrinkwrap` in a scratch copy (run in the checkout it would
// rename the lock file itself), so an install of the tarball gets exactly the dependency versions
// CI tested (docs/deploying.md#3-install-and-run). `--out DIR` writes it there instead of the
// checkout; `--remove` deletes the checkout's copy.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = fileURLToPath(new URL("..", import.meta.url));
const { values } = parseArgs({ options: { out: { type: "string" }, remove: { type: "boolean" } } });
if (values.remove) {
  rmSync(join(root, "npm-shrinkwrap.json"), { force: true });
  process.exit(0);
}
const scratch = mkdtempSync(join(tmpdir(), "tokensmith-shrinkwrap-"));
try {
  for (const name of ["package.json", "package-lock.json"]) copyFileSync(join(root, name), join(scratch, name));
  // The lock describes the tree: no node_modules, no scripts, no registry needed.
  execFileSync(process.platform === "win32" ? "npm.cmd" : "npm", ["shrinkwrap", "--ignore-scripts", "--no-audit", "--no-fund", "--offline"], { cwd: scratch, stdio: ["ignore", "ignore", "inherit"] });
  const shrinkwrap = JSON.parse(readFileSync(join(scratch, "npm-shrinkwrap.json"), "utf8"));
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
  // Every locked package, at its locked version: a shrinkwrap that lost any would not pin the install.
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (shrinkwrap.packages?.[path]?.version !== entry.version) throw new Error(`npm-shrinkwrap.json: ${path || "(root)"} is ${shrinkwrap.packages?.[path]?.version}, the lock says ${entry.version}`);
  }
  const out = join(values.out ?? root, "npm-shrinkwrap.json");
  writeFileSync(out, `${JSON.stringify(shrinkwrap, null, 2)}\n`);
  process.stderr.write(`npm-shrinkwrap.json: ${Object.keys(shrinkwrap.packages).length - 1} packages pinned (${out})\n`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
