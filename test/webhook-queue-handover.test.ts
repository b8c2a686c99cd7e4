// The durable push queue (WEBHOOK_QUEUE on the real Redis the suite starts) when its instances
// stop mid-job, over HTTP on built broker processes (`npx tsc -p tsconfig.build.json` first): a
// job taken over after its instance is SIGKILLed, handed back on SIGTERM, and a SIGTERM during
// the update-branch pace. Each test has its own queue prefix.
import { describe, expect, it } from "@jest/globals";
import { auditLines, broker, deliver, freshRepo, fx, queueUrl, timesUpdated, until, useQueueFixture } from "./support/webhook-queue-fixture.js";
import { REDIS_URL } from "./support/redis-url.js";

useQueueFixture();

describe("durable push queue (WEBHOOK_QUEUE, BullMQ on Redis): instances stopped mid-job", () => {
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

});
