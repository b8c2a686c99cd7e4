// The image's smoke test (run by deploy/smoke-test.sh): the production image against the platform
// simulator on the host. Each check prints one line; the first failure exits 1 after removing the
// container. Figures (image size, time to /healthz and to /readyz 200, SIGTERM to exit) are printed.
// What the image is: its OCI labels, a non-root user, and a root with no shell, no package manager
// and no interpreter but node (every executable file listed: node and shared libraries only), no
// simulator or sandbox; what it does: /healthz, /readyz, a /token exchange with a read-only root.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSimulator } from "../build/simulator/index.js";
import { check, freePorts, run } from "./script-helpers.mjs";

const image = process.argv[2] ?? "localhost/tokensmith:latest";
/** The broker's drain limit (server/main.ts forces an exit after 9 s) plus a margin: what docs/deploying.md documents. */
const GRACE_S = 10;
const name = `tokensmith-smoke-${randomBytes(4).toString("hex")}`;
const work = mkdtempSync(join(tmpdir(), "tokensmith-smoke-"));
const sim = await createSimulator();
let failed = false;

const podman = (args, options) => run("podman", args, {}, options);
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));

/** Shells, package managers and interpreters: none may be anywhere in the image. */
const FORBIDDEN = ["sh", "bash", "dash", "ash", "zsh", "busybox", "toybox", "apt", "apt-get", "apt-cache", "dpkg", "dpkg-deb",
  "rpm", "yum", "dnf", "apk", "perl", "python", "python3", "npm", "npx", "yarn", "yarnpkg", "pnpm", "corepack", "env", "su", "sudo",
  "curl", "wget", "id", "ls", "cat"];
/**
 * Runs in the container with its node: every file of the image (not /proc, /sys, /dev), named by
 * kind. An executable is a regular file with an x bit, a shared object (.so) aside.
 */
const INVENTORY = `
const { lstatSync, readdirSync } = require("node:fs");
const out = { executables: [], forbidden: [], scripts: [], files: 0, bytes: {} };
const forbidden = new Set(${JSON.stringify(FORBIDDEN)});
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = (dir === "/" ? "" : dir) + "/" + entry.name;
    if (["/proc", "/sys", "/dev"].includes(path)) continue;
    if (entry.isDirectory()) { walk(path); continue; }
    if (forbidden.has(entry.name) && !path.startsWith("/app/node_modules/")) out.forbidden.push(path);
    if (/[.](pl|pm|py|sh)$|(^|[/])perl[^/]*$/.test(entry.name) && !path.startsWith("/app/node_modules/")) out.scripts.push(path);
    const stat = lstatSync(path);
    if (!stat.isFile()) continue;
    out.files += 1;
    const top = path.startsWith("/app/") ? path.split("/").slice(0, 3).join("/") : path.startsWith("/usr/local/") ? "/usr/local/bin/node" : "/" + path.split("/")[1];
    out.bytes[top] = (out.bytes[top] ?? 0) + stat.size;
    if (stat.mode & 0o111 && !/\.so(\.[0-9.]+)?$/.test(entry.name) && !path.startsWith("/app/node_modules/")) out.executables.push(path);
  }
};
walk("/");
out.uid = process.getuid();
process.stdout.write(JSON.stringify(out));
`;

/** Polls `url` until `accept(response)` or the deadline; returns ms waited, or null. */
async function waitFor(url, accept, withinMs, from = Date.now()) {
  for (;;) {
    try {
      if (accept(await fetch(url, { signal: AbortSignal.timeout(2000) }))) return Date.now() - from;
    } catch {
      // not listening yet
    }
    if (Date.now() - from > withinMs) return null;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

try {
  const size = Number((await podman(["image", "inspect", "--format", "{{.Size}}", image])).out);
  console.log(`image ${image}: ${(size / 1e6).toFixed(0)} MB uncompressed`);
  const [inspected] = JSON.parse((await podman(["image", "inspect", image])).out);
  const config = inspected.Config ?? {};
  check(config.User && !/^(0|root)(:|$)/.test(config.User), `the image runs as a non-root user (${config.User})`);
  const labels = config.Labels ?? inspected.Labels ?? {};
  const oci = (name) => labels[`org.opencontainers.image.${name}`];
  check(["source", "revision", "version", "created", "licenses"].every((name) => typeof oci(name) === "string" && oci(name) !== ""),
    `OCI labels: source ${oci("source")}, revision ${oci("revision")}, version ${oci("version")}, created ${oci("created")}, licenses ${oci("licenses")}`);
  check(oci("version") === pkg.version && oci("licenses") === pkg.license && !Number.isNaN(Date.parse(oci("created"))),
    `the labels agree with package.json (version ${pkg.version}, licence ${pkg.license}) and created is a date`);
  // Built from this checkout (deploy/build-image.sh, the release): the revision is its commit.
  const head = await run("git", ["rev-parse", "HEAD"], {}, { allowFail: true }).catch(() => ({ code: 1, out: "" }));
  if (head.code === 0) check(oci("revision") === head.out, `the revision label is this checkout's commit (${head.out})`);
  const healthcheck = inspected.Healthcheck ?? config.Healthcheck;
  check(Array.isArray(healthcheck?.Test) && healthcheck.Test.join(" ").includes("/healthz"), "HEALTHCHECK on /healthz survives in the image (--format docker)");

  // The platform: one App installed on octo-org/app, its key handed over in a 0600 env file
  // (one line, `\n` escaped, as the spec allows), never on a command line.
  const app = sim.createApp({ keyFormat: "pkcs8" });
  sim.addInstallation({ appId: app.id, account: "octo-org", permissions: { contents: "write", metadata: "read" }, repositories: ["app"] });
  const [port, adminPort] = await freePorts(2);
  const envFile = join(work, "broker.env");
  writeFileSync(envFile, [
    `HOST_APP_ID=${app.id}`,
    `HOST_APP_PRIVATE_KEY=${app.privateKeyPem.trim().replace(/\n/g, "\\n")}`,
    `HOST_API_BASE=${sim.apiBase}`,
    `HOST_OIDC_ISSUER=${sim.oidc.issuer}`,
    "HOST=127.0.0.1", `PORT=${port}`, "ADMIN_HOST=127.0.0.1", `ADMIN_PORT=${adminPort}`,
  ].join("\n") + "\n", { mode: 0o600 });
  const broker = `http://127.0.0.1:${port}`;
  const admin = `http://127.0.0.1:${adminPort}`;

  const started = Date.now();
  await podman(["run", "-d", "--name", name, "--network", "host", "--read-only", "--tmpfs", "/tmp", "--cap-drop", "all",
    "--security-opt", "no-new-privileges", "--env-file", envFile, image]);
  const healthy = await waitFor(`${admin}/healthz`, (r) => r.status === 200, 30_000, started);
  check(healthy !== null, `/healthz 200 ${healthy} ms after podman run (read-only root filesystem, /tmp a tmpfs, no capabilities)`);
  const ready = await waitFor(`${admin}/readyz`, (r) => r.status === 200, 30_000, started);
  check(ready !== null, `/readyz 200 ${ready} ms after podman run (App configured, key set fetched)`);
  const health = await podman(["healthcheck", "run", name], { allowFail: true });
  check(health.code === 0, "the image's HEALTHCHECK passes");

  const inventory = JSON.parse((await podman(["exec", name, "node", "-e", INVENTORY])).out);
  check(inventory.uid !== 0, `the broker's process runs as uid ${inventory.uid}, not 0`);
  const write = await podman(["exec", name, "node", "-e", "require('fs').writeFileSync('/app/x', 'x')"], { allowFail: true });
  check(write.code !== 0 && /EROFS|read-only/i.test(write.err), "the root filesystem is read-only (a write under /app fails EROFS)");
  check(inventory.forbidden.length === 0, `no shell, package manager or interpreter anywhere: ${FORBIDDEN.join(", ")} absent${inventory.forbidden.length ? ` (found ${inventory.forbidden.join(", ")})` : ""}`);
  check(inventory.scripts.length === 0, `no Perl, Python or shell scripts (nothing to run them)${inventory.scripts.length ? ` (found ${inventory.scripts.slice(0, 5).join(", ")})` : ""}`);
  // bin/tokensmith.js keeps its x bit from the checkout; its `#!/usr/bin/env node` has no env to run here (the ENTRYPOINT runs node).
  const executables = inventory.executables.filter((path) => path !== "/app/bin/tokensmith.js");
  check(executables.join(" ") === "/usr/local/bin/node", `the only executable file is node (shared libraries aside): ${executables.join(", ")}`);
  const shell = await podman(["exec", name, "/bin/sh", "-c", "true"], { allowFail: true });
  check(shell.code !== 0, `podman exec /bin/sh fails (exit ${shell.code}): there is no shell to run`);
  const leftOut = await podman(["exec", name, "node", "-e", "const fs=require('fs');process.stdout.write(['/app/build/simulator','/app/build/server/sandbox','/app/dist','/app/node_modules/graphql','/app/node_modules/typescript'].filter((p)=>fs.existsSync(p)).join(' '))"]);
  check(leftOut.out === "", `no simulator, sandbox, bundled action, simulator-only package or devDependency in the image${leftOut.out ? ` (found ${leftOut.out})` : ""}`);
  const sizes = Object.entries(inventory.bytes).sort((a, b) => b[1] - a[1]).map(([path, bytes]) => `${path} ${(bytes / 1e6).toFixed(1)} MB`);
  console.log(`contents: ${inventory.files} files; ${sizes.join(", ")}`);
  // HSM keys (pkcs11js, an optional native addon): reported, required only where the build must have it.
  const pkcs11 = await podman(["exec", name, "node", "-e", "try{require('pkcs11js');process.stdout.write('loads')}catch(e){process.stdout.write(e.code||'absent')}"], { allowFail: true });
  if (process.env.SMOKE_REQUIRE_PKCS11 === "1") check(pkcs11.out === "loads", `pkcs11js (HSM keys) ${pkcs11.out} in the image`);
  else console.log(`pkcs11js (HSM keys, optional): ${pkcs11.out === "loads" ? "built and loads" : `not in the image (${pkcs11.out}); the broker runs without it`}`);

  const oidcToken = await sim.oidc.sign();
  const mints = () => sim.requests.filter((r) => r.method === "POST" && r.path.endsWith("/access_tokens")).length;
  const exchange = await fetch(`${broker}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken, owner: "octo-org", repo: "app" }) });
  const minted = await exchange.json();
  // The default TOKEN_POLICY (optional) also mints the broker's own policy-reader token: the
  // caller's token must be one the simulated platform minted, whatever else was minted.
  check(exchange.status === 200 && typeof minted.token === "string" && sim.tokens.has(minted.token) && mints() >= 1, `POST /token: ${exchange.status}, an installation token minted by the simulated platform`);

  // The figure behind the Kubernetes memory request (deploy/kubernetes/deployment.yaml): memory after start and one exchange.
  const stats = await podman(["stats", "--no-stream", "--no-reset", "--format", "{{.MemUsage}}", name], { allowFail: true });
  console.log(`memory in use after start and one exchange: ${stats.out.split("\n").at(-1) || "(podman stats unavailable)"}`);

  // SIGTERM with a request in flight: it is answered, then the process exits 0 within the grace period.
  sim.latencyMs = 1500;
  const inFlight = fetch(`${broker}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken: await sim.oidc.sign(), owner: "octo-org", repo: "app" }) });
  const seen = sim.requests.length;
  while (sim.requests.length === seen) await new Promise((resolve) => setTimeout(resolve, 10));
  const stopping = Date.now();
  await podman(["kill", "--signal", "TERM", name]);
  const drained = await inFlight;
  const exitCode = Number((await podman(["wait", name])).out);
  const stopMs = Date.now() - stopping;
  check(drained.status === 200, `the request in flight at SIGTERM is answered ${drained.status}`);
  check(exitCode === 0 && stopMs < GRACE_S * 1000, `SIGTERM: exit ${exitCode} after ${stopMs} ms (grace period ${GRACE_S} s)`);
  sim.latencyMs = 0;

  // The image's other commands run without the server: the version, from the image's package.json.
  const version = await podman(["run", "--rm", "--network", "none", "--read-only", "--cap-drop", "all", image, "--version"], { allowFail: true });
  check(version.code === 0 && version.out === `tokensmith ${pkg.version}`, `tokensmith --version in the image: ${version.out || version.err}`);
} catch (error) {
  failed = true;
  console.error(`smoke test failed: ${error instanceof Error ? error.message : String(error)}`);
  const logs = await podman(["logs", "--tail", "30", name], { allowFail: true });
  if (logs.out || logs.err) console.error(`container log (last lines):\n${logs.out}\n${logs.err}`);
} finally {
  await podman(["rm", "-f", "--time", "0", name], { allowFail: true });
  rmSync(work, { recursive: true, force: true });
  await sim.close();
}
process.exit(failed ? 1 : 0);
