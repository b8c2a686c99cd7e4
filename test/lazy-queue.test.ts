// BullMQ is loaded only when WEBHOOK_QUEUE is set (server/webhook/durable-queues.ts): a broker
// process in which BullMQ cannot be imported starts, and queues a push in process; the same
// process with WEBHOOK_QUEUE set cannot queue it (the control: the block does hold).
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "@jest/globals";
import { sendPush } from "./support/push-audit.js";
import { REDIS_URL, deleteKeysUnder } from "./support/redis-url.js";
import { spawnBroker, type BrokerProcess } from "./support/spawn-broker.js";

const SECRET = "lazy-queue-webhook-secret-0123456789abcdef";
const DENY = fileURLToPath(new URL("./support/deny-modules.mjs", import.meta.url));
const PREFIX = `lazy-${randomUUID().slice(0, 8)}`;
// An App, so that a push is queued (its job then fails to reach a platform: not this test's concern).
const APP = { HOST_APP_ID: "1", HOST_APP_PRIVATE_KEY: generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString(), HOST_API_BASE: "http://127.0.0.1:9" };
const brokers: BrokerProcess[] = [];
afterAll(async () => {
  await Promise.all(brokers.map((broker) => broker.stop()));
  await deleteKeysUnder([PREFIX]);
});

async function brokerWithoutBullmq(env: Record<string, string> = {}): Promise<BrokerProcess> {
  // 30 s to start: the resolve hook runs for every module the broker loads, on a loaded CI machine too.
  const broker = await spawnBroker({ NODE_OPTIONS: `--import=${DENY}`, TOKENSMITH_DENY_MODULES: "bullmq", HOST_WEBHOOK_SECRET: SECRET, AUTO_UPDATE_BRANCHES: "true", ...APP, ...env }, 30_000);
  brokers.push(broker);
  return broker;
}

describe("BullMQ", () => {
  it("is not loaded without WEBHOOK_QUEUE: the broker starts and queues a push in process", async () => {
    const broker = await brokerWithoutBullmq();
    const answer = await sendPush(broker.url, SECRET, "octo-org/app", 1);
    expect(answer).toEqual({ status: 202, body: expect.objectContaining({ ok: true, event: "push", queued: true }) });
    expect(broker.lines.join("\n")).not.toContain("may not be loaded");
  });

  it("is loaded, on first use, with WEBHOOK_QUEUE: where it cannot be, the push is answered 500 and the cause logged", async () => {
    const broker = await brokerWithoutBullmq({ WEBHOOK_QUEUE: `${REDIS_URL}?prefix=${PREFIX}` });
    const answer = await sendPush(broker.url, SECRET, "octo-org/app", 1);
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ error: "internal_error" });
    // The log line is written beside the answer, not before it: wait for it (5 s at most).
    for (let waited = 0; waited < 5000 && !broker.lines.join("\n").includes("may not be loaded"); waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(broker.lines.join("\n")).toContain("bullmq may not be loaded in this process");
  });
});
