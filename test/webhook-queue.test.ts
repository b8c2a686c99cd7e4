// The durable push queue (WEBHOOK_QUEUE on the real Redis the suite starts), over HTTP on built
// broker processes (`npx tsc -p tsconfig.build.json` first): answered at once, every pull request
// updated exactly once, one job for a delivery that reaches two instances at once, pushes during a
// job coalesced. The three run on one pair of instances on one queue (a broker with WEBHOOK_QUEUE
// costs about 1 s of CPU to start, BullMQ and its Redis connections), each on a repository of its
// own: the fixture stops a test's brokers after it, so they are one test in three steps. Stopping
// instances mid-job: test/webhook-queue-handover.test.ts.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { auditLines, broker, deliver, freshRepo, fx, queueUrl, timesUpdated, until, useQueueFixture } from "./support/webhook-queue-fixture.js";

useQueueFixture();

describe("durable push queue (WEBHOOK_QUEUE, BullMQ on Redis)", () => {
  it("answers 300 open pull requests at once and updates each exactly once; one job of one delivery that reaches both instances at once; pushes at either instance during a job coalesced into one follow-up job", async () => {
    const queue = queueUrl();
    const [a, b] = await Promise.all([broker(queue), broker(queue)]);

    // 1. 300 open pull requests at 50 ms per call: answered at once, an instance updates each exactly once.
    {
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
      fx.sim.latencyMs = 0;
      fx.sim.clearRequests();
    }

    // 2. One delivery that reaches the two instances at the same time makes one job.
    {
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
      fx.sim.clearRequests();
    }

    // 3. Pushes that arrive at either instance while a job runs coalesce into one follow-up job.
    {
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
      // The follow-up listed again (its pushes may have brought new pull requests) and found nothing
      // new to merge: the platform's 422 "no new commits on the base branch" is up to date, not a failure.
      expect([...byRest.updated, ...byRest.up_to_date].sort((x, y) => x - y)).toEqual(numbers);
      expect(byRest.failed).toEqual([]);
    }
  }, 240_000);
});
