// The durable push queue (WEBHOOK_QUEUE on the real Redis at 127.0.0.1:6379), over HTTP on built
// broker processes (`npx tsc -p tsconfig.build.json` first): answered at once, every pull request
// updated exactly once, a job taken over after its instance is SIGKILLed, one job for a delivery
// that reaches two instances at once. Each test has its own queue prefix.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";
import { signatureFor } from "../server/webhook/verify-signature.js";

const SECRET = "webhook-queue-secret-0123456789";
const ACCOUNT = "queue-org";
let fx: TokenFixture;
let installationId: number;
let repoCounter = 0;
const brokers: BrokerProcess[] = [];
const logs: string[] = [];
const prefixes: string[] = [];

beforeAll(async () => {
  fx = await tokenFixture();
  installationId = fx.sim.addInstallation({ appId: fx.app.id, account: ACCOUNT, permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
  // Pacing is test/webhook-pacing.test.ts's subject: here the queue runs as fast as it can.
  fx.sim.git.contentCreationPerMinute = Number.POSITIVE_INFINITY;
  fx.sim.git.contentCreationPerHour = Number.POSITIVE_INFINITY;
  // For the same reason GitHub's 900 REST points a minute are lifted, on both sides (the broker's
  // UPSTREAM_POINTS_PER_MINUTE below): at an unpaced 300 updates a job would spend 1,500 (at the
  // default UPDATE_BRANCH_PER_MINUTE of 60, a job spends 300). The concurrency limit (100 in
  // flight) stays on.
  fx.sim.limits.values.pointsPerMinute = Number.POSITIVE_INFINITY;
});
afterEach(async () => {
  for (const broker of brokers.splice(0)) {
    await broker.stop("SIGKILL");
    logs.push(...broker.lines);
  }
  fx.sim.latencyMs = 0;
  fx.sim.clearRequests();
});
afterAll(async () => {
  const redis = new Redis("redis://127.0.0.1:6379");
  for (const prefix of prefixes) {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  await redis.quit();
  await fx.sim.close();
  expectNoSecrets(logs, [SECRET, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
});

/** A fresh queue (its own prefix on the shared Redis), with a short lease so a takeover is quick. */
function queueUrl(): string {
  const prefix = `tokensmith-test-${randomUUID()}`;
  prefixes.push(prefix);
  return `redis://127.0.0.1:6379?prefix=${prefix}&lease_ms=2000`;
}

async function broker(queue: string, env: Record<string, string> = {}): Promise<BrokerProcess> {
  const started = await spawnBroker({
    ...fx.env,
    HOST_WEBHOOK_SECRET: SECRET,
    AUTO_UPDATE_BRANCHES: "on",
    WEBHOOK_QUEUE: queue,
    UPDATE_BRANCH_PER_MINUTE: "1000000",
    UPDATE_BRANCH_PER_HOUR: "1000000",
    UPSTREAM_POINTS_PER_MINUTE: "1000000",
    ...env,
  });
  brokers.push(started);
  return started;
}

function freshRepo(pulls: number): { repository: string; numbers: number[] } {
  const name = `repo-${++repoCounter}`;
  const repository = `${ACCOUNT}/${name}`;
  fx.sim.repository(ACCOUNT, name);
  fx.sim.git.createBranch(repository, "main");
  const numbers = Array.from({ length: pulls }, () => fx.sim.git.addPullRequest(repository, { base: "main" }));
  fx.sim.git.push(repository, "main");
  return { repository, numbers };
}

async function deliver(url: string, repository: string, deliveryId = randomUUID()) {
  const [owner, name] = repository.split("/");
  const raw = JSON.stringify({
    ref: "refs/heads/main",
    before: "0".repeat(40),
    after: "1".repeat(40),
    deleted: false,
    repository: { id: 1, name, full_name: repository, owner: { login: owner } },
    installation: { id: installationId },
  });
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": deliveryId, "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

interface AuditLine {
  msg: string;
  repository: string;
  deliveries: string[];
  updated: number[];
  failed: Array<{ number: number; status: number; error: string }>;
}

function auditLines(repository: string): AuditLine[] {
  return [...logs, ...brokers.flatMap((b) => b.lines)].flatMap((line) => {
    try {
      const entry = JSON.parse(line) as AuditLine & { audit?: string };
      return entry.audit === "pull_requests_updated" && entry.repository === repository ? [entry] : [];
    } catch {
      return [];
    }
  });
}

async function until<T>(what: string, check: () => T | undefined, limitMs = 90_000): Promise<T> {
  for (let waited = 0; waited < limitMs; waited += 25) {
    const found = check();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** update-branch answers per pull request of `repository`: number → statuses in order. */
function answersPerPull(repository: string): Map<number, number[]> {
  const per = new Map<number, number[]>();
  for (const call of fx.sim.git.updateBranchCalls) {
    if (call.repository !== repository) continue;
    per.set(call.number, [...(per.get(call.number) ?? []), call.status]);
  }
  return per;
}

const timesUpdated = (repository: string, number: number) => (answersPerPull(repository).get(number) ?? []).filter((s) => s === 202).length;

describe("durable push queue (WEBHOOK_QUEUE, BullMQ on Redis)", () => {
  it("answers 300 open pull requests at 50 ms per call at once; an instance updates each exactly once", async () => {
    const queue = queueUrl();
    const [a, b] = await Promise.all([broker(queue), broker(queue)]);
    const { repository, numbers } = freshRepo(300);
    // 50 ms is enough for the point (the job takes seconds, the answer milliseconds) at half the wait of 100.
    fx.sim.latencyMs = 50;
    fx.sim.clearRequests();

    const started = performance.now();
    const answer = await deliver(a.url, repository);
    const answeredMs = performance.now() - started;
    expect(answer).toEqual({ status: 202, body: { ok: true, event: "push", queued: true, repository, branch: "main", delivery: expect.any(String) } });
    // Answered before the work: at 50 ms a call and four at a time, 300 updates take seconds.
    const updatesWhenAnswered = fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository).length;
    expect(updatesWhenAnswered).toBeLessThan(30);

    const [audit] = await until("the job's audit line", () => {
      const found = auditLines(repository);
      return found.length > 0 ? found : undefined;
    });
    expect(audit).toMatchObject({ msg: "push handled", deliveries: [answer.body.delivery], failed: [] });
    expect(audit!.updated).toEqual([...numbers].sort((x, y) => x - y));
    for (const number of numbers) expect(timesUpdated(repository, number)).toBe(1);
    expect(fx.sim.requests.filter((r) => r.method === "GET" && r.path.endsWith("/pulls"))).toHaveLength(3);
    expect(auditLines(repository)).toHaveLength(1);
    process.stderr.write(`webhook-queue: 300 pull requests at 50 ms: answered in ${answeredMs.toFixed(0)} ms (run by ${[a, b].filter((x) => x.lines.some((l) => l.includes('"pull_requests_updated"'))).length} instance)\n`);
  }, 120_000);

  it("takes over a job whose broker was SIGKILLed mid-job: the job completes, no pull request updated twice", async () => {
    const queue = queueUrl();
    const first = await broker(queue);
    const { repository, numbers } = freshRepo(160);
    fx.sim.latencyMs = 40;
    const answer = await deliver(first.url, repository);
    expect(answer.status).toBe(202);
    await until("a quarter of the updates", () => (fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository).length >= 40 ? true : undefined));
    await first.stop("SIGKILL");
    const doneByFirst = fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository && c.status === 202).length;
    expect(doneByFirst).toBeLessThan(numbers.length);
    expect(auditLines(repository)).toHaveLength(0);
    // The base moves on meanwhile: a pull request updated again now would really be merged twice.
    fx.sim.git.push(repository, "main");

    // A restart (a new process on the same queue) takes the job over once its lease has run out.
    const second = await broker(queue);
    const [audit] = await until("the taken-over job's audit line", () => {
      const found = second.lines.some((l) => l.includes('"pull_requests_updated"')) ? auditLines(repository) : [];
      return found.length > 0 ? found : undefined;
    });
    expect(audit!.msg).toBe("push handled");
    expect(audit!.deliveries).toEqual([answer.body.delivery]);
    // Every pull request answered once in the job's outcome; none updated twice on the platform.
    const answered = [...audit!.updated, ...audit!.failed.map((f) => f.number)].sort((x, y) => x - y);
    expect(answered).toEqual([...numbers].sort((x, y) => x - y));
    for (const number of numbers) expect(timesUpdated(repository, number)).toBe(1);
    // Only an update in flight when the process died can be reported as rejected (its head moved).
    expect(audit!.failed.length).toBeLessThanOrEqual(8);
    for (const failure of audit!.failed) expect(failure).toMatchObject({ status: 422, error: "update_rejected" });
    // The listing was not repeated by the second instance: it used the first one's.
    expect(fx.sim.requests.filter((r) => r.method === "GET" && r.path.endsWith("/pulls"))).toHaveLength(2);
  }, 120_000);

  it("hands a running job back to the queue on SIGTERM (exit 0); the next instance finishes it", async () => {
    const queue = queueUrl();
    const first = await broker(queue);
    const { repository, numbers } = freshRepo(120);
    fx.sim.latencyMs = 40;
    const answer = await deliver(first.url, repository);
    expect(answer.status).toBe(202);
    await until("some updates", () => (fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository).length >= 20 ? true : undefined));
    expect(await first.stop("SIGTERM")).toBe(0);
    expect(first.lines.some((l) => l.includes("push job handed back to the queue at shutdown"))).toBe(true);
    expect(auditLines(repository)).toHaveLength(0);
    fx.sim.git.push(repository, "main");

    const second = await broker(queue);
    const [audit] = await until("the audit line", () => {
      const found = second.lines.some((l) => l.includes('"pull_requests_updated"')) ? auditLines(repository) : [];
      return found.length > 0 ? found : undefined;
    });
    // Handed back between two updates: every pull request updated, each once, nothing rejected.
    expect(audit).toMatchObject({ msg: "push handled", deliveries: [answer.body.delivery], failed: [] });
    expect(audit!.updated).toEqual(numbers);
    for (const number of numbers) expect(timesUpdated(repository, number)).toBe(1);
  }, 120_000);

  it("SIGTERM while a job waits for its update-branch pace: exit 0 at once (not the 9 s forced exit), the job handed back", async () => {
    const queue = queueUrl();
    const first = await broker(queue, { UPDATE_BRANCH_PER_MINUTE: "1" });
    const { repository } = freshRepo(5);
    expect((await deliver(first.url, repository)).status).toBe(202);
    await until("the first update", () => (fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository).length >= 1 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the next calls are in their minute's wait
    // The second waits a minute after the first: the process must still stop when told to.
    expect(await first.stop("SIGTERM")).toBe(0);
    expect(first.lines.some((l) => l.includes("push job handed back to the queue at shutdown"))).toBe(true);
    expect(first.lines.some((l) => l.includes("requests still in flight"))).toBe(false);
    expect(fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository)).toHaveLength(1);
  }, 60_000);

  it("makes one job of one delivery that reaches two instances at the same time", async () => {
    const queue = queueUrl();
    const [a, b] = await Promise.all([broker(queue), broker(queue)]);
    const { repository, numbers } = freshRepo(3);
    const deliveryId = randomUUID();
    const answers = await Promise.all([deliver(a.url, repository, deliveryId), deliver(b.url, repository, deliveryId)]);
    expect(answers.map((x) => x.status).sort()).toEqual([200, 202]);
    expect(answers.find((x) => x.status === 200)!.body).toEqual({ ok: true, event: "push", skipped: "duplicate_delivery", duplicate: true });
    const [audit] = await until("the audit line", () => {
      const found = auditLines(repository);
      return found.length > 0 ? found : undefined;
    });
    expect(audit!.updated).toEqual(numbers);
    // And later: still one job, each pull request updated once; a third copy is a duplicate too.
    expect(await deliver(b.url, repository, deliveryId)).toMatchObject({ status: 200, body: { skipped: "duplicate_delivery" } });
    expect(auditLines(repository)).toHaveLength(1);
    for (const number of numbers) expect(timesUpdated(repository, number)).toBe(1);
  }, 60_000);

  it("coalesces pushes that arrive at either instance while a job runs into one follow-up job", async () => {
    const queue = queueUrl();
    const [a, b] = await Promise.all([broker(queue), broker(queue)]);
    const { repository, numbers } = freshRepo(2);
    // A slow platform keeps the first job running (mint, listing, updates: half a second each)
    // while three more pushes arrive, at either instance (milliseconds each).
    fx.sim.latencyMs = 500;
    const firstAnswer = await deliver(a.url, repository);
    await until("the first job to start", () => (fx.sim.requests.some((r) => r.path.endsWith("/access_tokens")) ? true : undefined));
    const later = await Promise.all([deliver(a.url, repository), deliver(b.url, repository), deliver(b.url, repository)]);
    for (const answer of later) expect(answer.status).toBe(202);
    fx.sim.latencyMs = 0;
    const audits = await until("two jobs", () => {
      const found = auditLines(repository);
      return found.length >= 2 ? found : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 500)); // a third job, if one were made, would show by now
    expect(auditLines(repository)).toHaveLength(2);
    const byFirst = audits.find((x) => x.deliveries.includes(String(firstAnswer.body.delivery)))!;
    const byRest = audits.find((x) => x !== byFirst)!;
    expect(byFirst.deliveries).toHaveLength(1);
    expect(byRest.deliveries.sort()).toEqual(later.map((x) => String(x.body.delivery)).sort());
    expect(byFirst.updated).toEqual(numbers);
    // The follow-up listed again (its pushes may have brought new pull requests) and found nothing new to merge.
    expect([...byRest.updated, ...byRest.failed.map((f) => f.number)]).toEqual(numbers);
  }, 60_000);
});
