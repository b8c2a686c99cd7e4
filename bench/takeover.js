// `node bench/takeover.js [lease_ms]` (after `npx tsc -p tsconfig.build.json`; Redis at
// TAKEOVER_REDIS_URL, default redis://127.0.0.1:6379/14): two built brokers on one durable webhook
// queue (WEBHOOK_QUEUE, default lease 30 s) and the simulator; instance a takes a 300-pull-request
// job, b starts, a is SIGKILLed mid-job, as the platform
// accepts one of its updates. Prints how long after the kill b resumed the job (its
// first update-branch call) and finished it (the audit line), and that line's outcome.
import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { tokenFixture, INSTALLED_PERMISSIONS } from "../build/test/support/fixtures.js";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { signatureFor } from "../build/server/webhook/verify-signature.js";

const lease = process.argv[2];
const MAIN = process.env.BENCH_BROKER_MAIN || fileURLToPath(new URL("../build/server/main.js", import.meta.url));

/** The built broker on a free port, its stdout lines kept. */
async function spawnBroker(env) {
  const child = spawn(process.execPath, [MAIN], { env: { PATH: process.env.PATH, PORT: "0", LOG_LEVEL: "info", ...env }, stdio: ["ignore", "pipe", "inherit"] });
  const lines = [];
  let pending = "";
  const port = await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`broker exited with ${code}`)));
    child.stdout.on("data", (chunk) => {
      const parts = (pending + chunk.toString()).split("\n");
      pending = parts.pop();
      for (const line of parts) {
        lines.push(line);
        try {
          const entry = JSON.parse(line);
          if (entry.msg === "tokensmith broker listening") resolve(entry.port);
        } catch {}
      }
    });
  });
  const exited = new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once("exit", resolve)));
  return { url: `http://127.0.0.1:${port}`, lines, kill: (signal) => child.kill(signal), stop: async (signal) => (child.kill(signal), await exited) };
}
const REDIS = process.env.TAKEOVER_REDIS_URL ?? "redis://127.0.0.1:6379/14";
const SECRET = "takeover-bench-secret-0123456789-abcd";
const prefix = `tokensmith-bench-takeover-${randomUUID()}`;
const queue = `${REDIS}?prefix=${prefix}${lease ? `&lease_ms=${lease}` : ""}`;

const fx = await tokenFixture();
const installationId = fx.sim.addInstallation({ appId: fx.app.id, account: "bench-org", permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
fx.sim.git.contentCreationPerMinute = Number.POSITIVE_INFINITY;
fx.sim.git.contentCreationPerHour = Number.POSITIVE_INFINITY;
fx.sim.limits.values.pointsPerMinute = Number.POSITIVE_INFINITY;
fx.sim.latencyMs = 40;
const repository = "bench-org/repo";
fx.sim.repository("bench-org", "repo");
fx.sim.git.createBranch(repository, "main");
const numbers = Array.from({ length: 300 }, () => fx.sim.git.addPullRequest(repository, { base: "main" }));
fx.sim.git.push(repository, "main");

// Paced at 20 a second: the job lasts 15 s, so it is still running when its lease runs out.
const env = { ...fx.env, HOST_WEBHOOK_SECRET: SECRET, AUTO_UPDATE_BRANCHES: "on", WEBHOOK_QUEUE: queue, UPDATE_BRANCH_PER_MINUTE: "1200", UPDATE_BRANCH_PER_HOUR: "1000000", UPSTREAM_POINTS_PER_MINUTE: "1000000" };
const a = await spawnBroker(env);
const raw = JSON.stringify({ ref: "refs/heads/main", before: "0".repeat(40), after: randomBytes(20).toString("hex"), deleted: false, repository: { id: 1, name: "repo", full_name: repository, owner: { login: "bench-org" } }, installation: { id: installationId } });
const answer = await fetch(`${a.url}/webhook`, { method: "POST", headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(SECRET, raw) }, body: raw });
if (answer.status !== 202) throw new Error(`delivery answered ${answer.status}`);
const calls = () => fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository);
const until = async (check) => {
  for (;;) {
    const found = check();
    if (found) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
};
const b = await spawnBroker(env);
// SIGKILL a the moment the platform accepts its 40th update, before the answer is sent: that pull
// request is updated, but a never learns it (the case a taken-over job must report honestly).
let killedAt;
const recorded = fx.sim.git.updateBranchCalls;
const push = recorded.push;
recorded.push = function (...calls) {
  const length = push.apply(this, calls);
  if (killedAt === undefined && length >= 40) {
    killedAt = Date.now();
    a.kill("SIGKILL");
  }
  return length;
};
await until(() => killedAt);
await a.stop("SIGKILL");
const doneByA = calls().length;
await new Promise((r) => setTimeout(r, 200)); // the killed process's last answers settle
const settled = calls().length;
const resumedAt = await until(() => (calls().length > settled ? Date.now() : undefined));
const audit = await until(() => b.lines.map((l) => { try { return JSON.parse(l); } catch { return {}; } }).find((e) => e.audit === "pull_requests_updated"));
const finishedAt = Date.now();
await b.stop("SIGTERM");
await fx.sim.close();
const redis = new Redis(REDIS);
const keys = await redis.keys(`${prefix}:*`);
if (keys.length > 0) await redis.del(...keys);
await redis.quit();
const twice = numbers.filter((n) => calls().filter((c) => c.number === n && c.status === 202).length > 1);
console.log(JSON.stringify({
  lease_ms: Number(lease ?? 30000),
  updates_by_a_before_kill: doneByA,
  resumed_after_ms: resumedAt - killedAt,
  finished_after_ms: finishedAt - killedAt,
  audit: { updated: audit.updated?.length, up_to_date: audit.up_to_date?.length, failed: audit.failed, updated_before_takeover: audit.updated_before_takeover },
  updated_twice: twice,
}));
