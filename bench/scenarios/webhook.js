// Scenario `webhook`: POST /webhook with auto-update on, one repository with 500 open pull
// requests, each upstream request delayed 100 ms by the simulator. The built broker runs as a
// process of its own (its log read for the jobs' audit lines); 20 push deliveries are sent one
// after another. Targets (issue 13): every delivery answered in < 1 s (p99 of 20); every pull
// request updated exactly once by the first job; the later deliveries coalesced into one job.
// Pacing is lifted (UPDATE_BRANCH_PER_MINUTE, and the simulator's content-creation limit) so the
// drain measures the queue, not the pace: at the default 60 a minute, 500 updates take 500 / 60 min.
// So is GitHub's points budget, on both sides (the simulator's, and UPSTREAM_POINTS_PER_MINUTE):
// 500 updates are 2,500 of the installation's points, nearly three minutes at GitHub's 900.
// BENCH_WEBHOOK_QUEUE=redis://127.0.0.1:6379 runs it on the durable queue instead.
import { spawn } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { createSimulator, linkFloorMs } from "../../build/simulator/index.js";
import { UPDATE_CONCURRENCY } from "../../build/server/webhook/update-pull-requests.js";
import { bytesSince, megabytes, percentile } from "../support.js";

const PULLS = 500;
const LATENCY_MS = 100;
const DELIVERIES = 20;
const SECRET = "bench-webhook-secret-0123456789abcde";
const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export const description = `POST /webhook, ${PULLS} open pull requests at ${LATENCY_MS} ms per upstream request, ${DELIVERIES} deliveries`;

function startBroker(env) {
  const child = spawn(process.execPath, [here("../../build/server/main.js")], {
    env: { PATH: process.env.PATH, PORT: "0", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const audits = [];
  let buffered = "";
  const listening = new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`broker exited with ${code}`)));
    child.stdout.on("data", (chunk) => {
      buffered += chunk.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop();
      for (const line of lines) {
        let entry;
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        if (entry.msg === "tokensmith broker listening") resolve(`http://127.0.0.1:${entry.port}`);
        if (entry.audit === "pull_requests_updated") audits.push({ ...entry, at: performance.now() });
      }
    });
  });
  return { child, audits, listening };
}

// Over the link (run({ link })): the same once more with the simulator behind the link
// (simulator/link.ts, no added delay). The floor of the drain there: a connection (1 round trip),
// then for each job the broker ran (the first, and the one the later deliveries were coalesced
// into: it cannot know the pull requests are up to date without asking) its chain of round trips
// at the broker's write concurrency (UPDATE_CONCURRENCY update-branch calls at once: GitHub asks
// integrations not to send content-creating requests in parallel): the mint (the delivery names
// the installation), the first listing page then the others at once (2), then
// ⌈pull requests ÷ UPDATE_CONCURRENCY⌉ waves of update-branch; plus the larger direction's bytes
// ÷ bandwidth as the link counted them.
export async function run({ link } = {}) {
  const loop = await once({ latencyMs: LATENCY_MS });
  const linked = link ? await once({ link }) : undefined;
  const rows = [];
  const both = (metric, pick, extra = {}) => rows.push({ metric, value: pick(loop), link: linked ? pick(linked) : "", target: "", ok: null, ...extra });
  const p99 = (r) => percentile(r.answers, 99);
  both(`answer: p99 of ${DELIVERIES} deliveries`, (r) => `${p99(r).toFixed(1)} ms`, { target: "< 1000 ms", ok: linked ? [p99(loop) < 1000, p99(linked) < 1000] : p99(loop) < 1000 });
  both("answer: median", (r) => `${percentile(r.answers, 50).toFixed(1)} ms`);
  const onceOk = (r) => r.first.updated.length === PULLS && r.exactlyOnce;
  both("pull requests updated by the first job, each once", (r) => `${r.first.updated.length} (${r.exactlyOnce ? "each once" : "NOT each once"})`, { target: `${PULLS}, each once`, ok: linked ? [onceOk(loop), onceOk(linked)] : onceOk(loop) });
  both("jobs run for the deliveries (coalesced)", (r) => String(r.jobs), { target: "≤ 2", ok: linked ? [loop.jobs <= 2, linked.jobs <= 2] : loop.jobs <= 2 });
  const waves = Math.ceil(PULLS / UPDATE_CONCURRENCY);
  const floor = linked ? linkFloorMs(link, { roundTrips: 1 + linked.jobs * (1 + 2 + waves), bytes: Math.max(linked.bytes.up, linked.bytes.down) }) : undefined;
  both("time to drain (first delivery → last audit line)", (r) => `${(r.drainedMs / 1000).toFixed(1)} s`, linked ? { floor: `${(floor / 1000).toFixed(1)} s`, ratio: (linked.drainedMs / floor).toFixed(2) } : {});
  both("upstream: installation + mints + listings + update-branch", (r) => r.upstream);
  if (linked) rows.push({ metric: "  bytes on the wire, up + down", link: `${megabytes(linked.bytes.up + linked.bytes.down)} (${megabytes(linked.bytes.up)} up)`, target: "", ok: null });
  rows.push({ metric: "queue", value: loop.queue, target: "", ok: null });
  return rows;
}

async function once({ latencyMs = 0, link }) {
  const sim = await createSimulator({ secondaryLimits: { pointsPerMinute: Infinity }, ...(link ? { link } : {}) });
  const app = sim.createApp();
  const account = "bench-hooks";
  const installationId = sim.addInstallation({ appId: app.id, account, permissions: { contents: "write", pull_requests: "write", metadata: "read" }, repositories: "all" });
  const repository = `${account}/app`;
  sim.repository(account, "app");
  sim.git.createBranch(repository, "main");
  for (let i = 0; i < PULLS; i += 1) sim.git.addPullRequest(repository, { base: "main" });
  sim.git.push(repository, "main");
  sim.git.contentCreationPerMinute = Number.POSITIVE_INFINITY;
  sim.git.contentCreationPerHour = Number.POSITIVE_INFINITY;
  sim.latencyMs = latencyMs;

  const queue = process.env.BENCH_WEBHOOK_QUEUE ? `${process.env.BENCH_WEBHOOK_QUEUE}?prefix=bench-${randomUUID()}` : undefined;
  const broker = startBroker({
    HOST_APP_ID: String(app.id),
    HOST_APP_PRIVATE_KEY: app.privateKeyPem,
    HOST_API_BASE: sim.apiBase,
    HOST_WEBHOOK_SECRET: SECRET,
    AUTO_UPDATE_BRANCHES: "on",
    UPDATE_BRANCH_PER_MINUTE: "1000000",
    UPDATE_BRANCH_PER_HOUR: "1000000",
    UPSTREAM_POINTS_PER_MINUTE: "1000000000",
    ...(queue ? { WEBHOOK_QUEUE: queue } : {}),
  });
  try {
    const url = await broker.listening;
    const answers = [];
    const before = sim.link ? { ...sim.link.stats } : undefined;
    const started = performance.now();
    for (let i = 0; i < DELIVERIES; i += 1) {
      // Each push its own commit (`after`): the broker answers the same signed body under another
      // delivery id as a replay.
      const raw = JSON.stringify({ ref: "refs/heads/main", after: (i + 1).toString(16).padStart(40, "0"), deleted: false, repository: { full_name: repository }, installation: { id: installationId } });
      const signature = `sha256=${createHmac("sha256", SECRET).update(raw).digest("hex")}`;
      const sent = performance.now();
      const response = await fetch(`${url}/webhook`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": signature },
        body: raw,
      });
      const text = await response.text();
      if (response.status !== 202) throw new Error(`delivery ${i + 1}${link ? " (over the link)" : ""} answered ${response.status} ${text}`);
      answers.push(performance.now() - sent);
    }
    // Drained: every delivery is in an ended job's audit line.
    const deadline = performance.now() + 10 * 60_000;
    while (broker.audits.flatMap((a) => a.deliveries).length < DELIVERIES) {
      if (performance.now() > deadline) throw new Error("the queue did not drain within 10 minutes");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const drainedMs = Math.max(...broker.audits.map((a) => a.at)) - started;
    const first = broker.audits[0];
    const successes = new Map();
    for (const call of sim.git.updateBranchCalls) if (call.status === 202) successes.set(call.number, (successes.get(call.number) ?? 0) + 1);
    const exactlyOnce = successes.size === PULLS && [...successes.values()].every((n) => n === 1);
    const count = (pattern) => sim.requests.filter((r) => pattern.test(`${r.method} ${r.path}`)).length;
    return {
      answers,
      first,
      exactlyOnce,
      jobs: broker.audits.length,
      drainedMs,
      bytes: before ? bytesSince(sim.link, before) : undefined,
      upstream: `${count(/^GET \/app\/installations\/\d+$/)} + ${count(/access_tokens$/)} + ${count(/^GET .*\/pulls$/)} + ${count(/update-branch$/)}`,
      queue: queue ? "Redis (WEBHOOK_QUEUE)" : "in process",
    };
  } finally {
    broker.child.kill("SIGKILL");
    await sim.close();
  }
}
