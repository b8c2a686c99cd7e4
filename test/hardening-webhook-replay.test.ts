// Issue 24 item 4: a captured signed push replayed under a fresh X-GitHub-Delivery (which the
// signature does not cover) is not acted on again, the simulator as the platform: the in-process
// queue alone, two instances sharing LEGACY_QUOTA_KV (Redis), and the durable queue (WEBHOOK_QUEUE,
// Redis). Two instances are built brokers as child processes; one instance alone is a broker in
// this process (its queue is the subject, not a process: each process costs about 0.5 s of CPU to start).
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { signatureFor } from "../server/webhook/verify-signature.js";
import { startBroker } from "./support/broker.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { spawnBroker } from "./support/spawn-broker.js";
import { REDIS_URL } from "./support/redis-url.js";

const SECRET = "replay-webhook-secret-0123456789";
const ACCOUNT = "replay-org";
const DAY_MS = 24 * 3600_000;
let fx: TokenFixture;
let installationId: number;
let repoCounter = 0;
/** A broker as the tests use it: its address, and every line it has logged. */
interface Instance {
  url: string;
  lines: string[];
}
const running: Array<Instance & { stop(): Promise<unknown> }> = [];
const logs: string[] = [];
const prefixes: string[] = [];
/** Bodies claimed through LEGACY_QUOTA_KV's lease lock (unprefixed keys): removed at the end. */
const sharedDigests: string[] = [];
const digestOf = (raw: string) => createHash("sha256").update(raw).digest("hex");

beforeAll(async () => {
  fx = await tokenFixture();
  installationId = fx.sim.addInstallation({ appId: fx.app.id, account: ACCOUNT, permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
  fx.sim.git.contentCreationPerMinute = Number.POSITIVE_INFINITY;
  fx.sim.git.contentCreationPerHour = Number.POSITIVE_INFINITY;
});
afterEach(async () => {
  for (const broker of running.splice(0)) {
    await broker.stop();
    logs.push(...broker.lines);
  }
  fx.sim.faults.clear();
});
afterAll(async () => {
  const redis = new Redis(REDIS_URL);
  for (const prefix of prefixes) {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  if (sharedDigests.length > 0) await redis.del(...sharedDigests.map((digest) => `tokensmith-deliveries:body:${digest}`));
  await redis.quit();
  await fx.sim.close();
  expectNoSecrets(logs, [SECRET, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
});

const settings = (env: Record<string, string>) => ({
  ...fx.env,
  HOST_WEBHOOK_SECRET: SECRET,
  AUTO_UPDATE_BRANCHES: "on",
  UPDATE_BRANCH_PER_MINUTE: "1000000",
  UPDATE_BRANCH_PER_HOUR: "1000000",
  UPSTREAM_POINTS_PER_MINUTE: "1000000",
  ...env,
});

/** A built broker process: one of two instances. */
async function broker(env: Record<string, string> = {}): Promise<Instance> {
  const started = await spawnBroker(settings(env));
  running.push(started);
  return started;
}

/** A broker in this process: a test of one instance. */
async function oneBroker(env: Record<string, string> = {}): Promise<Instance> {
  const started = await startBroker(settings(env));
  const instance = { url: started.url, lines: started.logs, stop: () => started.close() };
  running.push(instance);
  return instance;
}

/** A durable queue of its own on the shared Redis. */
function queueUrl(): { url: string; prefix: string } {
  const prefix = `tokensmith-replay-${randomUUID()}`;
  prefixes.push(prefix);
  return { url: `${REDIS_URL}?prefix=${prefix}`, prefix };
}

/** A fresh repository whose one open pull request is behind `main`. */
function freshRepo(): { repository: string; number: number } {
  const name = `repo-${++repoCounter}-${randomUUID().slice(0, 8)}`;
  const repository = `${ACCOUNT}/${name}`;
  fx.sim.repository(ACCOUNT, name);
  fx.sim.git.createBranch(repository, "main");
  const number = fx.sim.git.addPullRequest(repository, { base: "main" });
  fx.sim.git.push(repository, "main");
  return { repository, number };
}

/** The raw bytes of a push to `main`, as the platform signs them: its own `after` each time. */
function pushBody(repository: string): string {
  const [owner, name] = repository.split("/");
  return JSON.stringify({
    ref: "refs/heads/main",
    before: randomBytes(20).toString("hex"),
    after: randomBytes(20).toString("hex"),
    created: false,
    deleted: false,
    repository: { name, full_name: repository, owner: { login: owner } },
    installation: { id: installationId },
  });
}

async function deliver(url: string, raw: string, deliveryId = randomUUID()) {
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": deliveryId, "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const DUPLICATE = { status: 200, body: { ok: true, event: "push", skipped: "duplicate_delivery", duplicate: true } };
const updatesOf = (repository: string) => fx.sim.requests.filter((r) => r.method === "PUT" && r.path.startsWith(`/repos/${repository}/pulls/`) && r.path.endsWith("/update-branch"));

/** The audit lines of the push jobs of `repository` in these brokers' logs. */
function audits(brokers: Instance[], repository: string): Array<Record<string, unknown>> {
  return brokers.flatMap((b) => b.lines).flatMap((line) => {
    const entry = JSON.parse(line) as Record<string, unknown>;
    return entry.audit === "pull_requests_updated" && entry.repository === repository ? [entry] : [];
  });
}

async function jobsEnded(brokers: Instance[], repository: string, count: number): Promise<Array<Record<string, unknown>>> {
  for (let waited = 0; waited < 60_000; waited += 20) {
    const found = audits(brokers, repository);
    if (found.length >= count) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`fewer than ${count} audit lines for ${repository} within 60 s`);
}

/**
 * A later push on another repository, run to its end: the queue took it after the replay, so a
 * replay that had been queued would have run (or be running) by then — an event to wait on
 * instead of a sleep.
 */
async function barrier(brokers: Instance[]): Promise<void> {
  const other = freshRepo();
  expect((await deliver(brokers[0]!.url, pushBody(other.repository))).status).toBe(202);
  await jobsEnded(brokers, other.repository, 1);
}

describe("a replayed signed push (in-process queue)", () => {
  it("is answered duplicate_delivery and not acted on again under a fresh delivery id; a new push is", async () => {
    const b = await oneBroker();
    const { repository, number } = freshRepo();
    const raw = pushBody(repository);
    expect(await deliver(b.url, raw)).toMatchObject({ status: 202, body: { queued: true } });
    expect((await jobsEnded([b], repository, 1))[0]).toMatchObject({ updated: [number] });
    fx.sim.git.push(repository, "main"); // the pull request is behind again: acting twice would show

    const replayId = randomUUID();
    expect(await deliver(b.url, raw, replayId)).toEqual(DUPLICATE);
    expect(await deliver(b.url, raw, replayId)).toEqual(DUPLICATE);
    await barrier([b]);
    expect(updatesOf(repository)).toHaveLength(1);
    expect(audits([b], repository)).toHaveLength(1);
    expect(b.lines.some((l) => l.includes("push body already seen under another delivery id"))).toBe(true);

    // The platform's next push (another body) is acted on.
    expect(await deliver(b.url, pushBody(repository))).toMatchObject({ status: 202 });
    expect((await jobsEnded([b], repository, 2))[1]).toMatchObject({ updated: [number] });
  });

  it("acts once when two copies arrive together under different ids", async () => {
    const b = await oneBroker();
    const { repository } = freshRepo();
    const raw = pushBody(repository);
    const answers = await Promise.all([deliver(b.url, raw), deliver(b.url, raw)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 202]);
    // The accepted copy's job first (the queue runs jobs side by side: the barrier's own job can
    // end before it), then the barrier: a second job for the body would have run by then.
    await jobsEnded([b], repository, 1);
    await barrier([b]);
    expect(audits([b], repository)).toHaveLength(1);
    expect(updatesOf(repository)).toHaveLength(1);
  });

  it("acts on the body again once its job failed before acting (the platform's redelivery must work)", async () => {
    const b = await oneBroker();
    const { repository, number } = freshRepo();
    const raw = pushBody(repository);
    fx.sim.faults.add({ method: "POST", path: /\/access_tokens$/, times: 1, respond: { status: 403, body: { message: "Forbidden" } } });
    expect((await deliver(b.url, raw)).status).toBe(202);
    expect((await jobsEnded([b], repository, 1))[0]).toMatchObject({ error: "installation_token_failed", updated: [] });
    expect((await deliver(b.url, raw)).status).toBe(202);
    expect((await jobsEnded([b], repository, 2))[1]).toMatchObject({ updated: [number] });
  });
});

describe("a replayed signed push across instances", () => {
  it("LEGACY_QUOTA_KV on Redis: copies under different ids reaching two instances at once are acted on once", async () => {
    const env = { LEGACY_QUOTA_KV: REDIS_URL };
    const [one, two] = [await broker(env), await broker(env)];
    const { repository } = freshRepo();
    for (let round = 0; round < 5; round += 1) {
      const raw = pushBody(repository);
      sharedDigests.push(digestOf(raw));
      const answers = await Promise.all([deliver(one.url, raw), deliver(two.url, raw)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 202]);
      // A later replay to either instance, under yet another id.
      expect(await deliver((round % 2 === 0 ? one : two).url, raw)).toEqual(DUPLICATE);
    }
    await barrier([one, two]);
  });

  it("WEBHOOK_QUEUE on Redis: one claim per body, SET NX with a 24 h expiry, whichever instance gets the copy", async () => {
    const queue = queueUrl();
    const [one, two] = [await broker({ WEBHOOK_QUEUE: queue.url }), await broker({ WEBHOOK_QUEUE: queue.url })];
    const { repository, number } = freshRepo();
    const raw = pushBody(repository);
    expect((await deliver(one.url, raw)).status).toBe(202);
    expect((await jobsEnded([one, two], repository, 1))[0]).toMatchObject({ updated: [number] });
    fx.sim.git.push(repository, "main");
    expect(await deliver(two.url, raw)).toEqual(DUPLICATE);
    expect(await deliver(one.url, raw)).toEqual(DUPLICATE);
    await barrier([one, two]);
    expect(updatesOf(repository)).toHaveLength(1);
    expect(audits([one, two], repository)).toHaveLength(1);

    const redis = new Redis(REDIS_URL);
    try {
      const ttl = await redis.pttl(`${queue.prefix}:body:${digestOf(raw)}`);
      expect(ttl).toBeGreaterThan(DAY_MS - 120_000);
      expect(ttl).toBeLessThanOrEqual(DAY_MS);
    } finally {
      await redis.quit();
    }
    // Copies at once to both instances, under different ids: one queued.
    for (let round = 0; round < 5; round += 1) {
      const copy = pushBody(repository);
      const answers = await Promise.all([deliver(one.url, copy), deliver(two.url, copy)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 202]);
    }
  });

  it("WEBHOOK_QUEUE on Redis: a body whose job failed before acting is acted on when it comes again", async () => {
    const queue = queueUrl();
    const b = await oneBroker({ WEBHOOK_QUEUE: queue.url });
    const { repository, number } = freshRepo();
    const raw = pushBody(repository);
    fx.sim.faults.add({ method: "POST", path: /\/access_tokens$/, times: 1, respond: { status: 403, body: { message: "Forbidden" } } });
    expect((await deliver(b.url, raw)).status).toBe(202);
    expect((await jobsEnded([b], repository, 1))[0]).toMatchObject({ error: "installation_token_failed" });
    // The job's end hands the claims back just after its audit line: wait for the key to go.
    const redis = new Redis(REDIS_URL);
    try {
      for (let waited = 0; (await redis.exists(`${queue.prefix}:body:${digestOf(raw)}`)) === 1; waited += 20) {
        if (waited > 10_000) throw new Error("the failed job's body claim was not handed back");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await redis.quit();
    }
    expect((await deliver(b.url, raw)).status).toBe(202);
    expect((await jobsEnded([b], repository, 2))[1]).toMatchObject({ updated: [number] });
  });
});
