// Issue 37 items 1 and 2 with the suite's real Redis shared by two built broker processes, the
// simulator as the platform — the durable queue (WEBHOOK_QUEUE), and the in-process queues claiming
// through LEGACY_QUOTA_KV's lease lock: a pull_request delivery is claimed once across instances
// (same body under fresh ids), one head sha gets one check run whichever instance each delivery
// reaches, and pull requests that change no policy file mint no check token.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHash, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { signatureFor } from "../server/webhook/verify-signature.js";
import { expectNoSecrets, INSTALLED_PERMISSIONS, tokenFixture, type TokenFixture } from "./support/fixtures.js";
import { deleteKeysUnder, REDIS_URL } from "./support/redis-url.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const SECRET = "check-run-queue-secret-0123456789";
const ACCOUNT = "checks-org";
let fx: TokenFixture;
let installationId: number;
/** This file's brokers (a pair per describe, stopped after its last test), their log lines, its queue prefixes, its repositories. */
const kept = { running: [] as BrokerProcess[], logs: [] as string[], prefixes: [] as string[], repositories: 0 };
/** Claims taken through LEGACY_QUOTA_KV's lease lock (unprefixed keys): removed at the end. */
const unprefixed = new Set<string>();

beforeAll(async () => {
  fx = await tokenFixture();
  installationId = fx.sim.addInstallation({ appId: fx.app.id, account: ACCOUNT, permissions: { ...INSTALLED_PERMISSIONS, checks: "write" }, repositories: "all" });
});
afterAll(async () => {
  await deleteKeysUnder(kept.prefixes);
  const redis = new Redis(REDIS_URL);
  if (unprefixed.size > 0) await redis.del(...unprefixed);
  await redis.quit();
  await fx.sim.close();
  expectNoSecrets(kept.logs, [SECRET, fx.app.privateKeyPem, ...fx.sim.tokens.keys()]);
});

type Sharing = "WEBHOOK_QUEUE" | "LEGACY_QUOTA_KV";

/** Two instances on one durable queue of the test's own, or in-process queues sharing LEGACY_QUOTA_KV. */
async function twoBrokers(sharing: Sharing): Promise<[BrokerProcess, BrokerProcess]> {
  const prefix = `tokensmith-checks-${randomUUID()}`;
  kept.prefixes.push(prefix);
  const shared = sharing === "WEBHOOK_QUEUE" ? { WEBHOOK_QUEUE: `${REDIS_URL}?prefix=${prefix}` } : { LEGACY_QUOTA_KV: REDIS_URL };
  const env = { ...fx.env, HOST_WEBHOOK_SECRET: SECRET, POLICY_CHECK_RUNS: "on", ...shared };
  const pair = (await Promise.all([spawnBroker(env), spawnBroker(env)])) as [BrokerProcess, BrokerProcess];
  kept.running.push(...pair);
  return pair;
}

/** An instance as one test sees it: its address, and the lines it wrote since that test began. */
type Instance = Pick<BrokerProcess, "url" | "lines">;
const fromNow = (pair: BrokerProcess[]): [Instance, Instance] =>
  pair.map((broker) => {
    const from = broker.lines.length;
    return { url: broker.url, get lines() { return broker.lines.slice(from); } };
  }) as [Instance, Instance];

/** A repository of its own with a pull request whose head changes `path`. */
function pullRequest(path: string, text: string): { repository: string; name: string; number: number; headSha: string } {
  const name = `repo-${++kept.repositories}`;
  const repository = `${ACCOUNT}/${name}`;
  fx.sim.repository(ACCOUNT, name);
  fx.sim.git.createBranch(repository, "main", { files: { "README.md": "# r\n" } });
  fx.sim.git.createBranch(repository, "change", { from: "main" });
  fx.sim.git.setFile(repository, path, text, { branch: "change" });
  const number = fx.sim.git.addPullRequest(repository, { base: "main", head: "change" });
  return { repository, name, number, headSha: fx.sim.git.pullRequest(repository, number).headSha };
}

function body(pr: ReturnType<typeof pullRequest>, action = "opened"): string {
  const repo = fx.sim.repository(ACCOUNT, pr.name);
  unprefixed.add(`tokensmith-check-runs:head:${repo.id}:${pr.headSha}`);
  return JSON.stringify({
    action, number: pr.number,
    pull_request: { number: pr.number, head: { sha: pr.headSha, ref: "change" }, base: { ref: "main", sha: fx.sim.git.pullRequest(pr.repository, pr.number).mergedBaseSha } },
    repository: { id: repo.id, name: pr.name, full_name: pr.repository, owner: { login: ACCOUNT, id: repo.ownerId } },
    installation: { id: installationId },
  });
}

async function deliver(to: Instance, raw: string, delivery = randomUUID()) {
  unprefixed.add(`tokensmith-deliveries:body:${createHash("sha256").update(raw).digest("hex")}`);
  const response = await fetch(`${to.url}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "pull_request", "x-github-delivery": delivery, "x-hub-signature-256": signatureFor(SECRET, raw) },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const outcomes = (brokers: Instance[]) => brokers.flatMap((b) => b.lines).filter((line) => /policy check run (created|skipped|failed)/.test(line));
async function checksDone(brokers: Instance[], count: number): Promise<void> {
  for (let waited = 0; waited < 60_000; waited += 20) {
    if (outcomes(brokers).length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${outcomes(brokers).length} of ${count} policy check outcomes logged`);
}
const checkRunsOn = (headSha: string) => fx.sim.git.checkRuns.filter((run) => run.headSha === headSha);
const POLICY = "rules:\n  - name: pr\n    if: {event: pull_request}\n    permissions: {contents: read}\n";

describe.each<Sharing>(["WEBHOOK_QUEUE", "LEGACY_QUOTA_KV"])("policy check runs, two instances sharing %s", (sharing) => {
  // One pair of instances for the three tests (their settings are the same; each test has
  // repositories of its own and reads only the lines written since it began). The reader-mint test
  // runs first, on instances that have minted nothing yet.
  let pair: BrokerProcess[];
  beforeAll(async () => {
    pair = await twoBrokers(sharing);
  });
  afterAll(async () => {
    for (const broker of kept.running.splice(0)) {
      await broker.stop();
      kept.logs.push(...broker.lines);
    }
  });

  it("30 pull requests that change no policy file → no check token, at most one reader mint per instance", async () => {
    const brokers = fromNow(pair);
    const prs = Array.from({ length: 30 }, (_, i) => pullRequest(`src/f-${i}.ts`, `export {};\n`));
    fx.sim.clearRequests();
    const answers = await Promise.all(prs.map((pr, i) => deliver(brokers[i % 2]!, body(pr))));
    expect(answers.map((a) => a.status)).toEqual(Array(30).fill(202));
    await checksDone(brokers, 30);
    const mints = fx.sim.requests.filter((r) => r.method === "POST" && r.path === `/app/installations/${installationId}/access_tokens`);
    expect(mints.length).toBeLessThanOrEqual(2);
    expect(mints.every((r) => JSON.stringify(r.body) === JSON.stringify({ permissions: { contents: "read" } }))).toBe(true);
    expect(fx.sim.requests.filter((r) => r.path.includes("/check-runs"))).toHaveLength(0);
  });

  it("one signed body sent 10 times to both instances (fresh ids) → one 202, nine duplicates, one check run", async () => {
    const brokers = fromNow(pair);
    const pr = pullRequest(".github/tokensmith.yml", POLICY);
    const raw = body(pr);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => deliver(brokers[i % 2]!, raw)));
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 200)).toEqual(Array(9).fill({ status: 200, body: { ok: true, event: "pull_request", skipped: "duplicate_delivery", duplicate: true } }));
    await checksDone(brokers, 1);
    expect(checkRunsOn(pr.headSha)).toEqual([expect.objectContaining({ conclusion: "success" })]);
  });

  it("two deliveries for one head sha, one to each instance → one check run", async () => {
    const brokers = fromNow(pair);
    const pr = pullRequest(".github/tokensmith.yml", "rules: [\n");
    const answers = await Promise.all([deliver(brokers[0], body(pr, "opened")), deliver(brokers[1], body(pr, "reopened"))]);
    expect(answers.map((a) => a.status)).toEqual([202, 202]);
    await checksDone(brokers, 2);
    expect(checkRunsOn(pr.headSha)).toEqual([expect.objectContaining({ conclusion: "failure" })]);
    expect(outcomes(brokers).filter((line) => line.includes("this head was checked already"))).toHaveLength(1);
  });
});
