// A Redis restart with persistence (docs/operations.md#redis-outages): the durable push queue
// (WEBHOOK_QUEUE) on a redis-server of the test's own keeping an append-only file, as the shipped
// compose and Kubernetes Redis do (`appendonly yes`, fsync every second), and a built broker that
// runs through the restart. Jobs are held at the platform while Redis stops (SIGTERM) and starts
// again on the same directory and port: the queued ones are still there and every job runs once;
// the delivery claims are still there, so a redelivery and a replayed body are still refused.
import { afterAll, describe, expect, it } from "@jest/globals";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { auditLines, broker, deliver, freshRepo, fx, pushBody, timesUpdated, until, useQueueFixture } from "./support/webhook-queue-fixture.js";
import { sample } from "./support/metrics-text.js";
import { freePort, ownRedis } from "./support/redis-server.js";

useQueueFixture();

const dir = mkdtempSync(join(tmpdir(), "tokensmith-redis-aof-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("durable push queue across a Redis restart (appendonly yes)", () => {
  it("jobs queued before the restart run once after it; a redelivery and a replayed body from before it are still refused", async () => {
    const redis = await ownRedis({ dir });
    await redis.start();
    try {
      const adminPort = await freePort();
      // The default lease (30 s): the running jobs' locks outlive the restart.
      const instance = await broker(`${redis.url}?prefix=restart-${randomUUID()}`, { ADMIN_PORT: String(adminPort), ADMIN_HOST: "127.0.0.1" });
      const depth = async () => sample(await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text(), "tokensmith_webhook_queue_depth");

      // Six repositories: four jobs start at once (the instance's concurrency) and are held where
      // they list their pull requests, until the platform is let answer; two wait in the queue.
      const repos = Array.from({ length: 6 }, () => freshRepo(3));
      const mine = new Set(repos.map((r) => r.repository));
      const listing = (path: string) => /\/repos\/([^/]+\/[^/]+)\/pulls$/.exec(path)?.[1];
      let answer!: () => void;
      const held = new Promise<void>((resolve) => (answer = resolve));
      const hold = fx.sim.faults.add({ method: "GET", path: /\/repos\/[^/]+\/[^/]+\/pulls$/, respond: { until: held } });
      const listed = () => fx.sim.requests.filter((r) => r.method === "GET" && mine.has(listing(r.path) ?? "")).length;
      try {
        const bodies = repos.map(({ repository }) => pushBody(repository));
        const accepted = [];
        for (const [index, { repository }] of repos.entries()) accepted.push(await deliver(instance.url, repository, randomUUID(), bodies[index]));
        expect(accepted.map((a) => a.status)).toEqual([202, 202, 202, 202, 202, 202]);
        await until("four jobs held at their listing", () => (listed() === 4 ? true : undefined));
        expect(await depth()).toBe(2);

        // Redis's own shutdown (it writes the file out), then a start on the same directory and port.
        await redis.stop("SIGTERM");
        expect(existsSync(join(dir, "appendonlydir"))).toBe(true);
        await redis.start();

        // The two queued jobs are there again (the broker reconnects on its own).
        let waiting: number | undefined;
        for (let attempt = 0; attempt < 400 && waiting !== 2; attempt += 1) {
          waiting = await depth();
          if (waiting !== 2) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(waiting).toBe(2);

        // The claims are there too: the first delivery sent again (GitHub's redelivery: same id,
        // same body) and the second's signed body under a fresh id (a replay) are refused.
        const redelivered = await deliver(instance.url, repos[0]!.repository, String(accepted[0]!.body.delivery), bodies[0]);
        expect([redelivered.status, redelivered.body]).toEqual([200, { ok: true, event: "push", skipped: "duplicate_delivery", duplicate: true }]);
        const replayed = await deliver(instance.url, repos[1]!.repository, randomUUID(), bodies[1]);
        expect([replayed.status, replayed.body]).toEqual([200, { ok: true, event: "push", skipped: "duplicate_delivery", duplicate: true }]);
        await until("the replay's warning", () => (instance.lines.some((l) => l.includes("push body already seen under another delivery id")) ? true : undefined));
        // While a push never seen is queued: the refusals are the claims', not a broker that refuses all.
        const control = freshRepo(2);
        mine.add(control.repository);
        repos.push(control);
        expect((await deliver(instance.url, control.repository)).status).toBe(202);
      } finally {
        hold.remove();
        answer();
      }

      // Every job, held or queued, finishes once: one audit line per repository, each pull request
      // updated once, none failed.
      const audits = await until("an audit line per repository", () => {
        const found = repos.map(({ repository }) => auditLines(repository));
        return found.every((lines) => lines.length > 0) ? found : undefined;
      });
      for (const [index, lines] of audits.entries()) {
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatchObject({ msg: "push handled", failed: [], updated: repos[index]!.numbers });
        for (const number of repos[index]!.numbers) expect(timesUpdated(repos[index]!.repository, number)).toBe(1);
      }
      expect(instance.lines.filter((l) => l.includes('"push job failed"'))).toEqual([]);
      expect(await depth()).toBe(0);
    } finally {
      await redis.stop();
    }
  }, 180_000);
});
