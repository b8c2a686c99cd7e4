// The durable push queue's test fixture (WEBHOOK_QUEUE on the real Redis the suite starts): one
// simulator App installed on an account with repositories made per test, built broker processes
// on a queue prefix of the test's own, signed push deliveries, and the audit lines the jobs write.
// Shared by test/webhook-queue.test.ts and test/webhook-queue-handover.test.ts (two files, so a
// run's two workers can share the waits), and test/webhook-queue-redis-restart.test.ts (a Redis of its own).
import { afterAll, afterEach, beforeAll } from "@jest/globals";
import { randomBytes, randomUUID } from "node:crypto";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./fixtures.js";
import { spawnBroker, type BrokerProcess } from "./spawn-broker.js";
import { signatureFor } from "../../server/webhook/verify-signature.js";
import { deleteKeysUnder, REDIS_URL } from "./redis-url.js";

const SECRET = "webhook-queue-secret-0123456789-0123";
const ACCOUNT = "queue-org";
export let fx: TokenFixture;
let installationId: number;
let repoCounter = 0;
const brokers: BrokerProcess[] = [];
const logs: string[] = [];
const prefixes: string[] = [];

/** Registers the file's hooks: the fixture before all, each test's brokers killed after it, Redis keys and logs checked at the end. */
export function useQueueFixture(): void {
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
    await deleteKeysUnder(prefixes);
    await fx.sim.close();
    expectNoSecrets(logs, [SECRET, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
  });
}

/** A fresh queue (its own prefix on the shared Redis), with a short lease so a takeover is quick. */
export function queueUrl(): string {
  const prefix = `tokensmith-test-${randomUUID()}`;
  prefixes.push(prefix);
  return `${REDIS_URL}?prefix=${prefix}&lease_ms=2000`;
}

export async function broker(queue: string, env: Record<string, string> = {}): Promise<BrokerProcess> {
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

export function freshRepo(pulls: number): { repository: string; numbers: number[] } {
  const name = `repo-${++repoCounter}`;
  const repository = `${ACCOUNT}/${name}`;
  fx.sim.repository(ACCOUNT, name);
  fx.sim.git.createBranch(repository, "main");
  const numbers = Array.from({ length: pulls }, () => fx.sim.git.addPullRequest(repository, { base: "main" }));
  fx.sim.git.push(repository, "main");
  return { repository, numbers };
}

/** A push's body for `repository`: every push its own head, as on the platform (a repeated body is a replay). */
export function pushBody(repository: string): string {
  const [owner, name] = repository.split("/");
  return JSON.stringify({
    ref: "refs/heads/main",
    before: "0".repeat(40),
    after: randomBytes(20).toString("hex"),
    deleted: false,
    repository: { id: 1, name, full_name: repository, owner: { login: owner } },
    installation: { id: installationId },
  });
}

/** A signed push delivery of `repository`: a fresh body, or `raw` (a body sent before, as a replay would be). */
export async function deliver(url: string, repository: string, deliveryId: string = randomUUID(), raw: string = pushBody(repository)) {
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": deliveryId, "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

export interface AuditLine {
  msg: string;
  repository: string;
  deliveries: string[];
  updated: number[];
  failed: Array<{ number: number; status: number; error: string }>;
  instance: string;
  up_to_date: number[];
  updated_before_takeover: Array<{ number: number; by: string }>;
}

export function auditLines(repository: string): AuditLine[] {
  return [...logs, ...brokers.flatMap((b) => b.lines)].flatMap((line) => {
    try {
      const entry = JSON.parse(line) as AuditLine & { audit?: string };
      return entry.audit === "pull_requests_updated" && entry.repository === repository ? [entry] : [];
    } catch {
      return [];
    }
  });
}

export async function until<T>(what: string, check: () => T | undefined, limitMs = 90_000): Promise<T> {
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

export const timesUpdated = (repository: string, number: number) => (answersPerPull(repository).get(number) ?? []).filter((s) => s === 202).length;
