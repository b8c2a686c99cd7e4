// POST /webhook over HTTP: signature over the raw bytes, event routing, and push → a queued job
// (in process here; test/webhook-queue.test.ts has the durable one) → update-branch on every open
// pull request of the pushed branch, through the simulator.
import { afterEach, describe, expect, it } from "@jest/globals";
import { randomBytes, randomUUID } from "node:crypto";
import { startBroker, type TestBroker } from "./support/broker.js";
import { INSTALLED_PERMISSIONS } from "./support/fixtures.js";
import { brokerPerTest } from "./support/broker-per-test.js";
import { signatureFor, verifySignature } from "../server/webhook/verify-signature.js";
import { REDIS_URL } from "./support/redis-url.js";

const SECRET = "webhook-secret-0123456789abcdef-0123";
const ACCOUNT = "hooks-org";
let installationId: number;
let repoCounter = 0;
const secrets: string[] = [SECRET];
const extraBrokers: TestBroker[] = [];

const t = brokerPerTest({
  secrets,
  // Pacing is test-webhook-pacing's subject: here the queue runs as fast as the simulator lets it.
  env: { HOST_WEBHOOK_SECRET: SECRET, AUTO_UPDATE_BRANCHES: "true", UPDATE_BRANCH_PER_MINUTE: "1000000", UPDATE_BRANCH_PER_HOUR: "1000000" },
  setup: (fx) => {
    installationId = fx.sim.addInstallation({ appId: fx.app.id, account: ACCOUNT, permissions: { ...INSTALLED_PERMISSIONS }, repositories: "all" });
    fx.sim.git.contentCreationPerMinute = Number.POSITIVE_INFINITY;
    fx.sim.git.contentCreationPerHour = Number.POSITIVE_INFINITY;
  },
});
// Extra brokers a test starts are closed after it, their logs kept with the rest.
afterEach(async () => {
  for (const b of extraBrokers.splice(0)) {
    t.logs.push(...b.logs);
    await b.close();
  }
});

/** A fresh repository with a `main` branch per test. */
function freshRepo(): { name: string; repository: string } {
  const name = `repo-${++repoCounter}`;
  const repository = `${ACCOUNT}/${name}`;
  t.fx.sim.repository(ACCOUNT, name);
  t.fx.sim.git.createBranch(repository, "main");
  return { name, repository };
}

function pushPayload(repository: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const [owner, name] = repository.split("/");
  return {
    ref: "refs/heads/main",
    before: "0".repeat(40),
    after: randomBytes(20).toString("hex"), // every push its own head, as on the platform (a repeated body is a replay)
    created: false,
    deleted: false,
    forced: false,
    repository: { id: 1, name, full_name: repository, owner: { login: owner, name: owner } },
    installation: { id: installationId, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" },
    sender: { login: "mona" },
    ...overrides,
  };
}

interface Delivery {
  event?: string | null;
  secret?: string;
  signature?: string | null;
  deliveryId?: string;
  url?: string;
}

async function deliver(payload: unknown, options: Delivery = {}) {
  const raw = typeof payload === "string" || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "GitHub-Hookshot/abc123", "x-github-delivery": options.deliveryId ?? randomUUID() };
  const event = options.event === undefined ? "push" : options.event;
  if (event !== null) headers["x-github-event"] = event;
  const signature = options.signature === undefined ? signatureFor(options.secret ?? SECRET, raw) : options.signature;
  if (signature !== null) headers["x-hub-signature-256"] = signature;
  const response = await fetch(`${options.url ?? t.broker.url}/webhook`, { method: "POST", headers, body: raw });
  const text = await response.text();
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  return { status: response.status, body };
}

interface AuditLine {
  audit: string;
  msg: string;
  job: string;
  repository: string;
  branch: string;
  deliveries: string[];
  updated: number[];
  up_to_date: number[];
  failed: Array<{ number: number; status: number; error: string }>;
  updated_before_takeover: Array<{ number: number; by: string }>;
  error?: string;
}

/** Every audit line of a finished push job, of every broker of this test so far. */
function auditLines(logs: readonly string[] = t.broker.logs): AuditLine[] {
  return logs.flatMap((line) => {
    const entry = JSON.parse(line) as Partial<AuditLine>;
    return entry.audit === "pull_requests_updated" ? [entry as AuditLine] : [];
  });
}

/** Waits (bounded, generously) until `count` jobs on `repository` have ended; returns their audit lines. */
async function jobsEnded(repository: string, count = 1, logs: () => readonly string[] = () => t.broker.logs): Promise<AuditLine[]> {
  for (let waited = 0; waited < 60_000; waited += 20) {
    const found = auditLines(logs()).filter((a) => a.repository === repository);
    if (found.length >= count) return found;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no audit line for ${repository} within 60 s`);
}

const queued = (repository: string, branch = "main") => ({ ok: true, event: "push", queued: true, repository, branch, delivery: expect.any(String) });

const mints = () => t.fx.sim.requests.filter((r) => r.method === "POST" && /\/access_tokens$/.test(r.path));
const listings = () => t.fx.sim.requests.filter((r) => r.method === "GET" && /\/pulls$/.test(r.path));
const updates = () => t.fx.sim.requests.filter((r) => r.method === "PUT" && /\/update-branch$/.test(r.path));

describe("webhook signature", () => {
  it("matches the platform's published test vector", () => {
    const secret = "It's a Secret to Everybody";
    const vector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(signatureFor(secret, "Hello, World!")).toBe(vector);
    expect(verifySignature(secret, Buffer.from("Hello, World!"), vector)).toBe(true);
    expect(verifySignature(secret, Buffer.from("Hello, World?"), vector)).toBe(false);
  });

  it("refuses the test vector's secret over HTTP: 26 characters is under the 32 minimum, so /webhook answers 503 as when unset, even to the vector's own signature", async () => {
    t.broker.env.HOST_WEBHOOK_SECRET = "It's a Secret to Everybody";
    const signature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    expect(await deliver("Hello, World!", { signature })).toMatchObject({ status: 503, body: { error: "webhook_disabled" } });
  });

  it("verifies over HTTP with a 32-character secret (then finds the body is not JSON)", async () => {
    const secret = "It's a Secret to Everybody ".padEnd(32, "!");
    expect(secret).toHaveLength(32);
    t.broker.env.HOST_WEBHOOK_SECRET = secret;
    const signature = signatureFor(secret, "Hello, World!");
    expect(await deliver("Hello, World!", { signature })).toMatchObject({ status: 400, body: { error: "invalid_json" } });
    expect(await deliver("Hello, World!", { signature: signature.replace(/.$/, (c) => (c === "0" ? "1" : "0")) })).toMatchObject({ status: 401, body: { error: "invalid_signature" } });
  });

  it("refuses a valid signature over a body that was then altered", async () => {
    const { repository } = freshRepo();
    const original = JSON.stringify(pushPayload(repository));
    const signature = signatureFor(SECRET, original);
    const altered = original.replace(`"ref":"refs/heads/main"`, `"ref":"refs/heads/evil"`);
    expect(altered).not.toBe(original);
    expect(await deliver(altered, { signature })).toMatchObject({ status: 401, body: { error: "invalid_signature" } });
    expect(await deliver(`${original} `, { signature })).toMatchObject({ status: 401, body: { error: "invalid_signature" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it.each<[string, string | null]>([
    ["no signature", null],
    ["an empty signature", ""],
    ["a signature made with another secret", signatureFor("another-secret", "{}")],
    ["the SHA-1 header form", `sha1=${"a".repeat(40)}`],
    ["a truncated digest", signatureFor(SECRET, "{}").slice(0, 40)],
    ["a digest without the sha256= prefix", signatureFor(SECRET, "{}").slice("sha256=".length)],
  ])("answers 401 invalid_signature to %s", async (_label, signature) => {
    expect(await deliver("{}", { event: "ping", signature })).toMatchObject({ status: 401, body: { error: "invalid_signature" } });
  });

  it("checks the signature before parsing: an unsigned non-JSON body is 401, not 400", async () => {
    expect(await deliver("{not json", { signature: null })).toMatchObject({ status: 401, body: { error: "invalid_signature" } });
  });

  it("answers 503 webhook_disabled when HOST_WEBHOOK_SECRET is unset, whatever was sent", async () => {
    delete t.broker.env.HOST_WEBHOOK_SECRET;
    expect(await deliver({ zen: "x" }, { event: "ping" })).toMatchObject({ status: 503, body: { error: "webhook_disabled" } });
    expect(await deliver("{not json", { signature: null })).toMatchObject({ status: 503, body: { error: "webhook_disabled" } });
    t.broker.env.HOST_WEBHOOK_SECRET = "";
    expect(await deliver({ zen: "x" }, { event: "ping", secret: "" })).toMatchObject({ status: 503, body: { error: "webhook_disabled" } });
  });

  it("answers 405 with Allow: POST to other methods", async () => {
    const response = await fetch(`${t.broker.url}/webhook`, { method: "GET" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
    expect(await response.json()).toEqual({ error: "method_not_allowed" });
  });

  it("answers 413 payload_too_large over 25 MiB", async () => {
    const raw = `{"pad":"${"x".repeat(25 * 1024 * 1024)}"}`;
    expect(await deliver(raw, { event: "ping" })).toMatchObject({ status: 413, body: { error: "payload_too_large" } });
  });
});

describe("webhook body and events", () => {
  it.each([
    ["not JSON", "{not json", "invalid_json"],
    ["an empty body", "", "invalid_json"],
    ["a JSON array", "[1,2]", "invalid_request"],
    ["a JSON string", "\"push\"", "invalid_request"],
    ["null", "null", "invalid_request"],
  ])("answers 400 to a signed body that is %s", async (_label, raw, error) => {
    expect(await deliver(raw)).toMatchObject({ status: 400, body: { error } });
  });

  it("answers 400 invalid_request to a signed delivery without X-GitHub-Event", async () => {
    expect(await deliver({ zen: "x" }, { event: null })).toMatchObject({ status: 400, body: { error: "invalid_request" } });
  });

  it("acknowledges ping without acting", async () => {
    const { status, body } = await deliver({ zen: "Keep it logically awesome.", hook_id: 1, hook: { type: "App" } }, { event: "ping" });
    expect(status).toBe(200);
    expect(body).toEqual({ ok: true, ignored: "ping" });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it.each(["pull_request", "installation", "check_run", "release"])("acknowledges %s as ignored", async (event) => {
    expect(await deliver({ action: "opened" }, { event })).toEqual({ status: 200, body: { ok: true, ignored: event } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });
});

describe("push with AUTO_UPDATE_BRANCHES off", () => {
  it.each([undefined, "", "enabled", "0", "false", "no", "off", "y", "truthy"])("is verified and nothing is done when the flag is %p", async (flag) => {
    if (flag === undefined) delete t.broker.env.AUTO_UPDATE_BRANCHES;
    else t.broker.env.AUTO_UPDATE_BRANCHES = flag;
    const { repository } = freshRepo();
    t.fx.sim.git.addPullRequest(repository, { base: "main" });
    t.fx.sim.git.push(repository, "main");
    expect(await deliver(pushPayload(repository))).toEqual({ status: 200, body: { ok: true, event: "push", skipped: "auto_update_disabled" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("still refuses a bad signature", async () => {
    delete t.broker.env.AUTO_UPDATE_BRANCHES;
    expect(await deliver(pushPayload("octo-org/app"), { secret: "wrong" })).toMatchObject({ status: 401, body: { error: "invalid_signature" } });
  });
});

describe("push with AUTO_UPDATE_BRANCHES on", () => {
  it.each(["1", "true", "TRUE", " yes ", "On"])("treats %p as on", async (flag) => {
    t.broker.env.AUTO_UPDATE_BRANCHES = flag;
    const { repository } = freshRepo();
    const number = t.fx.sim.git.addPullRequest(repository, { base: "main" });
    t.fx.sim.git.push(repository, "main");
    const deliveryId = randomUUID();
    const { status, body } = await deliver(pushPayload(repository), { deliveryId });
    expect(status).toBe(202);
    expect(body).toEqual({ ok: true, event: "push", queued: true, repository, branch: "main", delivery: deliveryId });
    const [audit] = await jobsEnded(repository);
    expect(audit).toMatchObject({ msg: "push handled", repository, branch: "main", deliveries: [deliveryId], updated: [number], failed: [] });
  });

  it("updates every open pull request on the pushed branch across pages; two 422s fail alone, one already up to date is not a failure", async () => {
    const { name, repository } = freshRepo();
    t.fx.sim.git.createBranch(repository, "develop", { from: "main" });
    const onMain: number[] = [];
    // 101 with `current` below: one past a page of 100.
    for (let i = 0; i < 100; i += 1) onMain.push(t.fx.sim.git.addPullRequest(repository, { base: "main" }));
    const onDevelop = t.fx.sim.git.addPullRequest(repository, { base: "develop" });
    const closed = t.fx.sim.git.addPullRequest(repository, { base: "main", state: "closed" });
    const [conflict, stale] = [onMain[5]!, onMain[64]!];
    t.fx.sim.git.failUpdateBranch(repository, conflict);
    t.fx.sim.git.failUpdateBranch(repository, stale, "expected head sha didn't match current head ref.");
    const newBase = t.fx.sim.git.push(repository, "main");
    // Opened after the push: its head already holds the base's head (the platform answers 422
    // "There are no new commits on the base branch.").
    const current = t.fx.sim.git.addPullRequest(repository, { base: "main" });
    onMain.push(current);
    const headsBefore = new Map(onMain.map((n) => [n, t.fx.sim.git.pullRequest(repository, n).headSha]));

    expect(await deliver(pushPayload(repository))).toEqual({ status: 202, body: queued(repository) });
    const [audit] = await jobsEnded(repository);
    const failedNumbers = [conflict, stale].sort((a, b) => a - b);
    expect(t.fx.sim.git.updateBranchCalls.find((c) => c.repository === repository && c.number === current)).toMatchObject({ status: 422 });
    expect(audit).toMatchObject({
      repository,
      branch: "main",
      updated: onMain.filter((n) => !failedNumbers.includes(n) && n !== current),
      up_to_date: [current],
      failed: failedNumbers.map((number) => ({ number, status: 422, error: "update_rejected" })),
      updated_before_takeover: [],
    });

    // One token from the delivery's installation, for that repository only, with what update-branch needs.
    expect(mints()).toHaveLength(1);
    expect(mints()[0]!.path).toBe(`/app/installations/${installationId}/access_tokens`);
    expect(mints()[0]!.body).toEqual({ repositories: [name], permissions: { contents: "write", pull_requests: "write" } });
    // Every page of open pull requests based on the pushed branch.
    expect(listings().map((r) => r.query)).toEqual([
      { state: "open", base: "main", per_page: "100", page: "1" },
      { state: "open", base: "main", per_page: "100", page: "2" },
    ]);
    // Each update asked with the head the listing showed; nothing else was touched.
    expect(updates()).toHaveLength(101);
    const numberOf = (path: string) => Number(/pulls\/(\d+)\/update-branch$/.exec(path)![1]);
    expect(updates().map((call) => ({ number: numberOf(call.path), body: call.body }))).toEqual(updates().map((call) => ({ number: numberOf(call.path), body: { expected_head_sha: headsBefore.get(numberOf(call.path)) } })));
    expect(t.fx.sim.git.updateBranchCalls.map((c) => c.number)).not.toContain(onDevelop);
    expect(t.fx.sim.git.updateBranchCalls.map((c) => c.number)).not.toContain(closed);
    // The updated pull requests now contain the new base.
    const updated = t.fx.sim.git.pullRequest(repository, onMain[0]!);
    expect(t.fx.sim.git.commit(updated.headSha)!.parents).toContain(newBase);
    expect(t.fx.sim.git.pullRequest(repository, conflict).headSha).toBe(headsBefore.get(conflict));
  });

  it("answers with empty lists when no pull request targets the branch", async () => {
    const { repository } = freshRepo();
    t.fx.sim.git.createBranch(repository, "feature", { from: "main" });
    expect(await deliver(pushPayload(repository, { ref: "refs/heads/feature" }))).toEqual({ status: 202, body: queued(repository, "feature") });
    expect(await jobsEnded(repository)).toEqual([expect.objectContaining({ branch: "feature", updated: [], failed: [] })]);
    expect(updates()).toHaveLength(0);
  });

  it("skips a tag push", async () => {
    const { repository } = freshRepo();
    expect(await deliver(pushPayload(repository, { ref: "refs/tags/v1.2.3" }))).toEqual({ status: 200, body: { ok: true, event: "push", skipped: "tag_push" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("skips a deleted tag as a tag push, not a branch deletion", async () => {
    const { repository } = freshRepo();
    const payload = pushPayload(repository, { ref: "refs/tags/v1.2.3", deleted: true, after: "0".repeat(40) });
    expect(await deliver(payload)).toEqual({ status: 200, body: { ok: true, event: "push", skipped: "tag_push" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("skips a ref that is neither a branch nor a tag as not_a_branch", async () => {
    const { repository } = freshRepo();
    expect(await deliver(pushPayload(repository, { ref: "refs/notes/commits" }))).toEqual({ status: 200, body: { ok: true, event: "push", skipped: "not_a_branch" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("skips a branch deletion", async () => {
    const { repository } = freshRepo();
    const payload = pushPayload(repository, { ref: "refs/heads/gone", deleted: true, after: "0".repeat(40) });
    expect(await deliver(payload)).toEqual({ status: 200, body: { ok: true, event: "push", skipped: "branch_deleted" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it.each<[string, Record<string, unknown>]>([
    ["no ref", { ref: undefined }],
    ["no repository", { repository: undefined }],
    ["no installation", { installation: undefined }],
    ["an installation id that is not a number", { installation: { id: "12" } }],
  ])("answers 400 invalid_request to a push with %s", async (_label, overrides) => {
    const payload = JSON.parse(JSON.stringify(pushPayload("octo-org/app", overrides)));
    expect(await deliver(payload)).toMatchObject({ status: 400, body: { error: "invalid_request" } });
    expect(t.fx.sim.requests).toHaveLength(0);
  });

  it("answers 503 app_unconfigured when the App is not configured", async () => {
    delete t.broker.env.HOST_APP_PRIVATE_KEY;
    expect(await deliver(pushPayload("octo-org/app"))).toMatchObject({ status: 503, body: { error: "app_unconfigured" } });
  });

  it("ends the job with installation_token_failed when the mint fails; a redelivery then acts", async () => {
    const { repository } = freshRepo();
    const number = t.fx.sim.git.addPullRequest(repository, { base: "main" });
    t.fx.sim.git.push(repository, "main");
    const deliveryId = randomUUID();
    t.fx.sim.faults.add({ method: "POST", path: /\/access_tokens$/, times: 1, respond: { status: 403, body: { message: "Forbidden" } } });
    expect(await deliver(pushPayload(repository), { deliveryId })).toEqual({ status: 202, body: queued(repository) });
    expect(await jobsEnded(repository)).toEqual([expect.objectContaining({ msg: "push job failed", error: "installation_token_failed", deliveries: [deliveryId], updated: [] })]);
    expect(await deliver(pushPayload(repository), { deliveryId })).toEqual({ status: 202, body: queued(repository) });
    expect((await jobsEnded(repository, 2))[1]).toMatchObject({ msg: "push handled", updated: [number], failed: [] });
  });

  it("ends the job with installation_token_failed for an installation that is gone", async () => {
    const { repository } = freshRepo();
    expect(await deliver(pushPayload(repository, { installation: { id: 999_999_999 } }))).toEqual({ status: 202, body: queued(repository) });
    expect(await jobsEnded(repository)).toEqual([expect.objectContaining({ error: "installation_token_failed" })]);
    expect(listings()).toHaveLength(0);
  });

  it("ends the job with internal_error when the pull requests cannot be listed", async () => {
    const { repository } = freshRepo();
    t.fx.sim.faults.add({ method: "GET", path: /\/pulls$/, respond: { status: 403, body: { message: "Resource not accessible by integration" } } });
    expect(await deliver(pushPayload(repository))).toEqual({ status: 202, body: queued(repository) });
    expect(await jobsEnded(repository)).toEqual([expect.objectContaining({ error: "internal_error" })]);
    expect(updates()).toHaveLength(0);
  });

  it("reports a platform error on one pull request and updates the others", async () => {
    const { repository } = freshRepo();
    const [first, second, third] = [1, 2, 3].map(() => t.fx.sim.git.addPullRequest(repository, { base: "main" })) as [number, number, number];
    t.fx.sim.git.push(repository, "main");
    t.fx.sim.faults.add({ method: "PUT", path: `/repos/${repository}/pulls/${second}/update-branch`, respond: { status: 502, body: { message: "Server Error" } } });
    expect(await deliver(pushPayload(repository))).toMatchObject({ status: 202 });
    expect((await jobsEnded(repository))[0]).toMatchObject({ updated: [first, third], failed: [{ number: second, status: 502, error: "platform_error" }] });
  });
});

describe("push redelivery", () => {
  it("acknowledges a redelivery of the same X-GitHub-Delivery without acting twice", async () => {
    const { repository } = freshRepo();
    const number = t.fx.sim.git.addPullRequest(repository, { base: "main" });
    t.fx.sim.git.push(repository, "main");
    const deliveryId = randomUUID();
    expect(await deliver(pushPayload(repository), { deliveryId })).toEqual({ status: 202, body: queued(repository) });
    expect((await jobsEnded(repository))[0]).toMatchObject({ updated: [number] });
    t.fx.sim.git.push(repository, "main");
    expect(await deliver(pushPayload(repository), { deliveryId })).toEqual({
      status: 200,
      body: { ok: true, event: "push", skipped: "duplicate_delivery", duplicate: true },
    });
    expect(mints()).toHaveLength(1);
    expect(updates()).toHaveLength(1);
    // A new delivery for the same push is acted on.
    expect(await deliver(pushPayload(repository))).toEqual({ status: 202, body: queued(repository) });
    expect((await jobsEnded(repository, 2))[1]).toMatchObject({ updated: [number] });
  });

  /** A second in-process broker sharing LEGACY_QUOTA_KV (Redis) with the first, and a repository with one pull request behind its base. */
  async function twoBrokersOnOneRedis() {
    t.broker.env.LEGACY_QUOTA_KV = REDIS_URL;
    const other = await startBroker({ ...t.broker.env });
    extraBrokers.push(other);
    const { repository } = freshRepo();
    const number = t.fx.sim.git.addPullRequest(repository, { base: "main" });
    t.fx.sim.git.push(repository, "main");
    return { other, repository, number };
  }

  it("acts once across in-process brokers sharing LEGACY_QUOTA_KV (Redis), one after the other", async () => {
    const { other, repository, number } = await twoBrokersOnOneRedis();
    const deliveryId = randomUUID();
    expect(await deliver(pushPayload(repository), { deliveryId })).toEqual({ status: 202, body: queued(repository) });
    expect((await jobsEnded(repository))[0]).toMatchObject({ updated: [number] });
    expect(await deliver(pushPayload(repository), { deliveryId, url: other.url })).toMatchObject({ status: 200, body: { skipped: "duplicate_delivery", duplicate: true } });
    expect(updates()).toHaveLength(1);
  });

  it("acts once across in-process brokers sharing LEGACY_QUOTA_KV (Redis) when copies reach both at the same time", async () => {
    const { other, repository, number } = await twoBrokersOnOneRedis();
    // Ten deliveries, each reaching both instances at once: each acted on by exactly one of them.
    for (let round = 0; round < 10; round += 1) {
      const deliveryId = randomUUID();
      const answers = await Promise.all([deliver(pushPayload(repository), { deliveryId }), deliver(pushPayload(repository), { deliveryId, url: other.url })]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 202]);
      expect(answers.find((a) => a.status === 200)!.body).toMatchObject({ skipped: "duplicate_delivery", duplicate: true });
    }
    // Ten jobs run, on either instance, in an order neither log shows: the pull request is updated
    // by whichever job reaches it first, and the later ones find it up to date.
    const bothLogs = () => [...t.broker.logs, ...other.logs];
    for (let waited = 0; !auditLines(bothLogs()).some((a) => a.repository === repository && a.updated?.includes(number)); waited += 20) {
      if (waited > 60_000) throw new Error(`no job updated ${repository}#${number} within 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(updates().length).toBeGreaterThanOrEqual(1);
  });

  it("acts once when two copies arrive at the same time", async () => {
    const { repository } = freshRepo();
    t.fx.sim.git.addPullRequest(repository, { base: "main" });
    t.fx.sim.git.push(repository, "main");
    const deliveryId = randomUUID();
    const answers = await Promise.all([deliver(pushPayload(repository), { deliveryId }), deliver(pushPayload(repository), { deliveryId })]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 202]);
    expect(answers.filter((a) => a.body?.duplicate === true)).toHaveLength(1);
    await jobsEnded(repository);
    expect(updates()).toHaveLength(1);
  });
});

describe("push queue unavailable", () => {
  // A URL that cannot work is the operator's fix (500); a Redis that does not answer is retryable
  // (503 with Retry-After; GitHub does not retry by itself: the operator redelivers).
  it.each([
    ["not a Redis URL", "memory://", 500, { error: "internal_error" }],
    ["a Redis nobody answers on", "redis://127.0.0.1:1", 503, expect.objectContaining({ error: "webhook_queue_unavailable" })],
  ])("answers an error when WEBHOOK_QUEUE is %s, and claims nothing", async (_label, url, status, body) => {
    t.broker.env.WEBHOOK_QUEUE = url;
    const { repository } = freshRepo();
    const deliveryId = randomUUID();
    expect(await deliver(pushPayload(repository), { deliveryId })).toEqual({ status, body });
    expect(t.fx.sim.requests).toHaveLength(0);
    // Back on the in-process queue, the platform's redelivery of the same delivery is acted on.
    delete t.broker.env.WEBHOOK_QUEUE;
    expect(await deliver(pushPayload(repository), { deliveryId })).toEqual({ status: 202, body: queued(repository) });
    await jobsEnded(repository);
  });
});

describe("push queue (in process)", () => {
  it("answers before the work: 60 pull requests at 750 ms per upstream call are answered 202 and then all updated", async () => {
    const { repository } = freshRepo();
    const numbers = Array.from({ length: 60 }, () => t.fx.sim.git.addPullRequest(repository, { base: "main" }));
    t.fx.sim.git.push(repository, "main");
    t.fx.sim.latencyMs = 750;
    try {
      const answer = await deliver(pushPayload(repository));
      // Answered without a single upstream call: the work is the queue's.
      expect(answer).toEqual({ status: 202, body: queued(repository) });
      expect(t.fx.sim.requests.filter((r) => r.path.includes("/pulls"))).toHaveLength(0);
      t.fx.sim.latencyMs = 20;
      const [audit] = await jobsEnded(repository);
      expect(audit!.updated).toEqual(numbers);
      expect(t.fx.sim.git.updateBranchCalls.filter((c) => c.repository === repository && c.status === 202)).toHaveLength(60);
    } finally {
      t.fx.sim.latencyMs = 0;
    }
  });

  it("coalesces pushes to one (repository, branch) while a job is pending: one listing, each pull request updated once", async () => {
    const { repository } = freshRepo();
    const numbers = [1, 2, 3].map(() => t.fx.sim.git.addPullRequest(repository, { base: "main" }));
    t.fx.sim.git.push(repository, "main");
    // The first job's listing hangs a while, so the next pushes find a job running and then one pending.
    t.fx.sim.latencyMs = 300;
    const first = randomUUID();
    expect(await deliver(pushPayload(repository), { deliveryId: first })).toMatchObject({ status: 202 });
    const joined = [randomUUID(), randomUUID(), randomUUID()];
    for (const deliveryId of joined) expect(await deliver(pushPayload(repository), { deliveryId })).toMatchObject({ status: 202 });
    t.fx.sim.latencyMs = 0;
    const audits = await jobsEnded(repository, 2);
    await new Promise((resolve) => setTimeout(resolve, 200)); // a third job, if any, would have ended by now
    const all = auditLines().filter((a) => a.repository === repository);
    expect(all).toHaveLength(2);
    expect(audits[0]!.deliveries).toEqual([first]);
    expect(audits[1]!.deliveries).toEqual(joined);
    expect(listings()).toHaveLength(2);
    // Each job updated each pull request at most once.
    for (const audit of all) {
      expect([...audit.updated, ...audit.up_to_date].sort((a, b) => a - b)).toEqual(numbers);
      expect(audit.failed).toEqual([]);
    }
  });
});

describe("workflows permission", () => {
  /** An installation of its own (with or without `workflows: write`), a pull request, and a base push touching a workflow. */
  function workflowPush(workflows: boolean) {
    const account = `wf-org-${workflows ? "with" : "without"}-${++repoCounter}`;
    const id = t.fx.sim.addInstallation({
      appId: t.fx.app.id,
      account,
      permissions: { ...INSTALLED_PERMISSIONS, ...(workflows ? { workflows: "write" } : {}) },
      repositories: "all",
    });
    const repository = `${account}/app`;
    t.fx.sim.repository(account, "app");
    t.fx.sim.git.createBranch(repository, "main");
    const number = t.fx.sim.git.addPullRequest(repository, { base: "main" });
    t.fx.sim.git.push(repository, "main", { files: { ".github/workflows/ci.yml": "on: push\njobs: {}\n" } });
    return { id, repository, number, payload: pushPayload(repository, { installation: { id } }) };
  }

  it("asks for workflows: write when the installation holds it, so a base that changed a workflow can be merged", async () => {
    const { repository, number, payload } = workflowPush(true);
    expect(await deliver(payload)).toMatchObject({ status: 202 });
    expect((await jobsEnded(repository))[0]).toMatchObject({ updated: [number], failed: [] });
    expect(mints().at(-1)!.body).toEqual({ repositories: ["app"], permissions: { contents: "write", pull_requests: "write", workflows: "write" } });
  });

  it("does not ask for it when the installation lacks it; the platform then refuses that merge (403, forbidden)", async () => {
    const { repository, number, payload } = workflowPush(false);
    expect(await deliver(payload)).toMatchObject({ status: 202 });
    expect((await jobsEnded(repository))[0]).toMatchObject({ updated: [], failed: [{ number, status: 403, error: "forbidden" }] });
    expect(mints().at(-1)!.body).toEqual({ repositories: ["app"], permissions: { contents: "write", pull_requests: "write" } });
    const refusal = updates().at(-1)!.response!.body as { message: string };
    expect(refusal.message).toBe("refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission");
  });
});
