// The image's smoke test (run by deploy/smoke-test.sh): the production image against the platform
// simulator on the host. Each check prints one line; the first failure exits 1 after removing the
// container. Figures (image size, time to /healthz and to /readyz 200, SIGTERM to exit) are printed.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

  const uid = (await podman(["exec", name, "id", "-u"])).out;
  check(uid !== "" && uid !== "0", `id -u in the container is ${uid}, not 0`);
  const write = await podman(["exec", name, "node", "-e", "require('fs').writeFileSync('/app/x', 'x')"], { allowFail: true });
  check(write.code !== 0 && /EROFS|read-only/i.test(write.err), "the root filesystem is read-only (a write under /app fails EROFS)");
  const tools = await podman(["exec", name, "sh", "-c", "command -v npm || command -v npx || command -v yarn || echo none"], { allowFail: true });
  check(tools.out === "none", "no package manager in the runtime image (npm, npx, yarn absent)");

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

  // The sandbox inside the production image: no devDependencies, no network (loopback only).
  const demo = await podman(["run", "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp", "--cap-drop", "all", image, "sandbox", "--demo"], { allowFail: true });
  check(demo.code === 0 && demo.out.includes("demo done"), `tokensmith sandbox --demo in the image: exit ${demo.code}`);
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
