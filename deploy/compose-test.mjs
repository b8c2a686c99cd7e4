// deploy/compose.yaml under podman-compose (run by deploy/compose-test.sh): two broker instances
// and Redis, the platform simulator on the host. Checks: both instances ready; every service with a
// restart policy; Redis refusing a client without the password; a webhook accepted by one instance
// is processed once; an instance SIGKILLed mid-job, the other finishes the job (no pull request
// updated twice); a cold /releases on both at once crawls once; `down -v` leaves no container and
// no volume of the project. Prints its figures.
import { createHmac, randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSimulator } from "../build/simulator/index.js";
import { check, freePorts, run } from "./script-helpers.mjs";

const COMPOSE = new URL("compose.yaml", import.meta.url).pathname;
const project = `tokensmith-compose-${randomBytes(3).toString("hex")}`;
const work = mkdtempSync(join(tmpdir(), "tokensmith-compose-"));
const SECRET = randomBytes(16).toString("hex");
const TRIGGER = randomBytes(16).toString("hex");
const sim = await createSimulator();
let failed = false;

async function until(what, condition, withinMs = 60_000) {
  const giveUp = Date.now() + withinMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > giveUp) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const status = async (url) => fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0);

const portList = await freePorts(5);
const ports = Object.fromEntries(["a", "b", "adminA", "adminB", "redis"].map((name, i) => [name, portList[i]]));
const env = {
  TOKENSMITH_ENV_FILE: join(work, "broker.env"),
  TOKENSMITH_PORT_A: String(ports.a), TOKENSMITH_PORT_B: String(ports.b),
  TOKENSMITH_ADMIN_PORT_A: String(ports.adminA), TOKENSMITH_ADMIN_PORT_B: String(ports.adminB),
  TOKENSMITH_REDIS_PORT: String(ports.redis),
  TOKENSMITH_LEASE_MS: "2000", // a SIGKILLed instance's job is taken over after 2 s, not the default 30
  TOKENSMITH_REDIS_PASSWORD: randomBytes(32).toString("hex"),
};

/** Redis's first answer to PING from a client that sends no password. */
function pingWithoutPassword(port) {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
    socket.setTimeout(2000, () => socket.destroy());
    socket.once("data", (data) => { resolve(String(data).trim()); socket.destroy(); });
    socket.once("error", (error) => resolve(`error ${error.code}`));
    socket.once("close", () => resolve("closed"));
  });
}
/** The names of the project's containers and volumes that podman still has. */
async function leftovers() {
  const names = async (args) => (await run("podman", args)).out.split("\n").filter((name) => name.startsWith(project));
  return [...await names(["ps", "-a", "--format", "{{.Names}}"]), ...await names(["volume", "ls", "--format", "{{.Name}}"])];
}
// podman-compose 1.0.3 (Debian 12) needs the shim for network_mode: host (see the script).
const SHIM = new URL("podman-compose-host-network.sh", import.meta.url).pathname;
const compose = (...args) => run("podman-compose", ["--podman-path", SHIM, "-p", project, "-f", COMPOSE, ...args], env);
const brokerA = `http://127.0.0.1:${ports.a}`;
const brokerB = `http://127.0.0.1:${ports.b}`;
const container = (service) => `${project}_${service}_1`;

try {
  const app = sim.createApp({ keyFormat: "pkcs8" });
  const installationId = sim.addInstallation({ appId: app.id, account: "compose-org", permissions: { contents: "write", pull_requests: "write", metadata: "read" }, repositories: "all" });
  sim.git.contentCreationPerMinute = Number.POSITIVE_INFINITY;
  sim.git.contentCreationPerHour = Number.POSITIVE_INFINITY;
  sim.limits.values.pointsPerMinute = Number.POSITIVE_INFINITY;
  writeFileSync(env.TOKENSMITH_ENV_FILE, [
    `HOST_APP_ID=${app.id}`,
    `HOST_APP_PRIVATE_KEY=${app.privateKeyPem.trim().replace(/\n/g, "\\n")}`,
    `HOST_API_BASE=${sim.apiBase}`,
    `HOST_OIDC_ISSUER=${sim.oidc.issuer}`,
    `HOST_WEBHOOK_SECRET=${SECRET}`,
    `PROCESS_TRIGGER_SECRET=${TRIGGER}`,
    "AUTO_UPDATE_BRANCHES=on", "UPDATE_BRANCH_PER_MINUTE=1000000", "UPDATE_BRANCH_PER_HOUR=1000000", "UPSTREAM_POINTS_PER_MINUTE=1000000",
  ].join("\n") + "\n", { mode: 0o600 });

  const started = Date.now();
  await compose("up", "-d");
  const readyMs = await until("both instances ready", async () =>
    (await status(`http://127.0.0.1:${ports.adminA}/readyz`)) === 200 && (await status(`http://127.0.0.1:${ports.adminB}/readyz`)) === 200 ? Date.now() - started : 0);
  check(true, `both instances /readyz 200 ${readyMs} ms after podman-compose up (Redis, App, key set)`);
  const policies = await Promise.all(["redis", "broker-a", "broker-b"].map(async (service) => (await run("podman", ["inspect", "--format", "{{.HostConfig.RestartPolicy.Name}}", container(service)])).out));
  check(policies.every((policy) => policy === "unless-stopped"), `every service restarts unless stopped: ${policies.join(", ")}`);
  const noAuth = await pingWithoutPassword(ports.redis);
  check(noAuth.startsWith("-NOAUTH"), `Redis refuses a client without the password: ${noAuth}`);
  sim.repository("compose-org", "tokens");
  // An OIDC token mints once across the instances (its jti is claimed in the shared Redis): each
  // instance gets a job's token of its own, then A's token sent again to B is refused.
  const postToken = (url, oidcToken) => fetch(`${url}/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ oidcToken, owner: "compose-org", repo: "tokens" }) }).then((r) => r.status);
  const jobTokens = await Promise.all([brokerA, brokerB].map(() => sim.oidc.sign({ repository: "compose-org/tokens", repository_owner: "compose-org" })));
  const tokens = await Promise.all([brokerA, brokerB].map((url, i) => postToken(url, jobTokens[i])));
  check(tokens.every((s) => s === 200), `both instances answer POST /token: ${tokens.join(", ")}`);
  const replayed = await postToken(brokerB, jobTokens[0]);
  check(replayed === 409, `a token used on instance a is refused on instance b (409 oidc_token_replayed): ${replayed}`);

  let repoCounter = 0;
  const freshRepo = (pulls) => {
    const name = `repo-${++repoCounter}`;
    const repository = `compose-org/${name}`;
    sim.repository("compose-org", name);
    sim.git.createBranch(repository, "main");
    const numbers = Array.from({ length: pulls }, () => sim.git.addPullRequest(repository, { base: "main" }));
    sim.git.push(repository, "main");
    return { repository, numbers };
  };
  const deliver = async (url, repository) => {
    const [owner, name] = repository.split("/");
    const raw = JSON.stringify({ ref: "refs/heads/main", before: "0".repeat(40), after: randomBytes(20).toString("hex"), deleted: false, repository: { id: 1, name, full_name: repository, owner: { login: owner } }, installation: { id: installationId } });
    const signature = `sha256=${createHmac("sha256", SECRET).update(raw).digest("hex")}`;
    const response = await fetch(`${url}/webhook`, { method: "POST", headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": signature }, body: raw });
    return { status: response.status, body: await response.json() };
  };
  const updates = (repository) => {
    const per = new Map();
    for (const call of sim.git.updateBranchCalls) if (call.repository === repository && call.status === 202) per.set(call.number, (per.get(call.number) ?? 0) + 1);
    return per;
  };

  // A webhook accepted by one instance: processed once, whichever instance takes the job.
  {
    const { repository, numbers } = freshRepo(20);
    const answer = await deliver(brokerA, repository);
    check(answer.status === 202 && answer.body.queued === true, `a push delivered to instance a: ${answer.status} queued`);
    const from = Date.now();
    await until("every pull request updated", () => updates(repository).size === numbers.length);
    await new Promise((resolve) => setTimeout(resolve, 2500)); // past a lease: a second run would show by now
    const counts = [...updates(repository).values()];
    check(counts.length === numbers.length && counts.every((n) => n === 1), `its ${numbers.length} pull requests each updated exactly once, in ${Date.now() - from - 2500} ms`);
  }

  // SIGKILL mid-job: b paused so a takes the job; a killed with the job half done; b finishes it.
  {
    const { repository, numbers } = freshRepo(40);
    await run("podman", ["pause", container("broker-b")]);
    sim.latencyMs = 100;
    const answer = await deliver(brokerA, repository);
    check(answer.status === 202, `a push of ${numbers.length} pull requests delivered to instance a (b paused)`);
    await until("a few updates by instance a", () => updates(repository).size >= 5);
    await run("podman", ["kill", "--signal", "KILL", container("broker-a")]);
    const doneByA = updates(repository).size;
    const killedAt = Date.now();
    await run("podman", ["unpause", container("broker-b")]);
    await until("instance b finishing the job", () => updates(repository).size === numbers.length, 90_000);
    sim.latencyMs = 0;
    const counts = [...updates(repository).values()];
    check(counts.every((n) => n === 1), `instance a SIGKILLed after ${doneByA} of ${numbers.length} updates; instance b finished the job ${Date.now() - killedAt} ms later, no pull request updated twice`);
    await run("podman", ["start", container("broker-a")]);
    await until("instance a back", async () => (await status(`http://127.0.0.1:${ports.adminA}/readyz`)) === 200);
  }

  // A cold /releases on both at once: one crawl for the pair.
  {
    sim.clearRequests();
    sim.latencyMs = 40; // keeps the crawl in flight while the other instance's request arrives
    const answers = await Promise.all([brokerA, brokerB].map((url) => fetch(`${url}/releases`, { headers: { authorization: `Bearer ${TRIGGER}` } }).then(async (r) => ({ status: r.status, body: await r.json() }))));
    sim.latencyMs = 0;
    const listings = sim.requests.filter((r) => r.method === "GET" && r.path === "/app/installations").length;
    check(answers.every((a) => a.status === 200), `GET /releases on both at once: ${answers.map((a) => a.status).join(", ")}`);
    check(listings === 1, `one crawl for the pair: ${listings} installation listing(s)`);
    check(JSON.stringify(answers[0].body.repos) === JSON.stringify(answers[1].body.repos), "both answer the same aggregate");
  }

  // `down -v`, as docs/deploying.md says to take the stack away: no container, no volume left.
  await compose("down", "-v", "-t", "2");
  const left = await leftovers();
  check(left.length === 0, `podman-compose down -v leaves no container or volume of the project${left.length ? ` (left: ${left.join(", ")})` : ""}`);
} catch (error) {
  failed = true;
  console.error(`compose test failed: ${error instanceof Error ? error.message : String(error)}`);
  for (const service of ["broker-a", "broker-b", "redis"]) {
    const logs = await run("podman", ["logs", "--tail", "15", container(service)], {}, { allowFail: true });
    console.error(`-- ${service}:\n${logs.out}\n${logs.err}`);
  }
} finally {
  await run("podman", ["unpause", container("broker-b")], {}, { allowFail: true });
  // -v: the project's Redis volume goes too, so a run leaves nothing behind.
  await run("podman-compose", ["--podman-path", SHIM, "-p", project, "-f", COMPOSE, "down", "-v", "-t", "2"], env, { allowFail: true });
  await run("podman", ["network", "rm", "-f", `${project}_default`], {}, { allowFail: true }); // made by podman-compose, used by none
  rmSync(work, { recursive: true, force: true });
  await sim.close();
}
process.exit(failed ? 1 : 0);
