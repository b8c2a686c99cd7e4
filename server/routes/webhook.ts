import type { RequestHandler, Response } from "express";
import { BrokerError } from "../../shared/broker-error.js";
import type { WebhookIgnoredResponse, WebhookPullRequestResponse, WebhookPushResponse } from "../../shared/types.js";
import type { BrokerContext } from "../context.js";
import { MIB, parseJsonObject, rawBody } from "../http/json-body.js";
import { sendJson } from "../http/send-json.js";
import { isObject } from "../http/fields.js";
import { dropPoliciesOnPush, dropReadersOnInstallationChange, policyFilesPushed } from "../policy/drop-on-push.js";
import { readPolicyPullRequest } from "../policy/policy-check-run.js";
import { requireApp } from "../token/trust.js";
import { bodyDigest } from "../webhook/claim-log.js";
import { createMemoryCheckRunQueue, type CheckRunQueue } from "../webhook/check-run-queue.js";
import { createCheckRunShare } from "../webhook/check-run-share.js";
import { createMemoryClaims } from "../webhook/memory-claims.js";
import { createMemoryQueue, type PushQueue } from "../webhook/memory-queue.js";
import { readPush } from "../webhook/read-push.js";
import { createDurableQueues } from "../webhook/durable-queues.js";
import { verifySignature } from "../webhook/verify-signature.js";

/** The platform's cap on a webhook payload (docs/operations.md#running-it). */
const WEBHOOK_BODY_LIMIT = 25 * MIB;

/**
 * POST /webhook, top to bottom (docs/design.md#order-of-checks): secret configured → raw body (413 over
 * the limit) → signature over the raw bytes → JSON → event. A `push` is acted on when
 * AUTO_UPDATE_BRANCHES is on: the push is queued (answered 202 at once) and the queue brings the
 * open pull requests on the pushed branch up to date; a `pull_request` when POLICY_CHECK_RUNS is on:
 * its policy check is queued likewise. Every delivery acted on is claimed first (id and signed body).
 */
export function webhookRoute(ctx: BrokerContext): { handlers: RequestHandler[]; close(): Promise<void> } {
  const queues = createPushQueues(ctx);
  return {
    handlers: [requireWebhookSecret(ctx), rawBody(WEBHOOK_BODY_LIMIT), verifyDelivery(ctx), handleDelivery(ctx, queues)],
    close: () => queues.close(),
  };
}

/** The push queue and the check-run queue of one `WEBHOOK_QUEUE`. */
interface Queues {
  push: PushQueue;
  checks: CheckRunQueue;
}

/**
 * The queues of the current `WEBHOOK_QUEUE` (one pair per URL; unset: in process). The durable ones
 * are started with the app when the setting is there at start-up, so a restarted instance takes
 * over the jobs left waiting or running. Check runs spend one share of the App's budget, whichever queue.
 */
function createPushQueues(ctx: BrokerContext) {
  const queues = new Map<string, Promise<Queues>>();
  const share = createCheckRunShare(ctx);
  const forUrl = (url: string | null): Promise<Queues> => {
    const key = url ?? "";
    let pair = queues.get(key);
    if (!pair) {
      pair = url === null
        ? Promise.resolve({ push: createMemoryQueue(ctx), checks: createMemoryCheckRunQueue(ctx, share) })
        : createDurableQueues(ctx, url, share);
      // An unusable URL is each delivery's to answer (500), and asked again by the next one.
      pair.catch(() => queues.delete(key));
      queues.set(key, pair);
    }
    return pair;
  };
  try {
    const atStart = ctx.settings().webhookQueueUrl;
    if (atStart !== null) {
      forUrl(atStart).catch((error: unknown) => {
        ctx.log.error({ problem: error instanceof Error ? error.message.slice(0, 200) : "unusable" }, "webhook queue not started: pushes are answered 500 internal_error until WEBHOOK_QUEUE is usable");
      });
    }
  } catch (error) {
    // An unreadable environment is each request's to answer (500).
    ctx.log.error({ problem: error instanceof Error ? error.message.slice(0, 200) : "unusable" }, "webhook queue not started: pushes are answered 500 internal_error until WEBHOOK_QUEUE is usable");
  }
  return {
    async get(url: string | null): Promise<Queues> {
      try {
        return await forUrl(url);
      } catch (error) {
        throw new BrokerError("internal_error", { detail: "WEBHOOK_QUEUE unusable", cause: error });
      }
    },
    async close(): Promise<void> {
      // The check-run queue first: it uses the push queue's Redis connection.
      await Promise.all([...queues.values()].map(async (started) => {
        const pair = await started.catch(() => undefined);
        if (!pair) return;
        await pair.checks.close();
        await pair.push.close();
      }));
    },
  };
}

function requireWebhookSecret(ctx: BrokerContext): RequestHandler {
  return (_req, _res, next) => next(ctx.settings().webhookSecret ? undefined : new BrokerError("webhook_disabled"));
}

function verifyDelivery(ctx: BrokerContext): RequestHandler {
  return (req, res, next) => {
    const secret = ctx.settings().webhookSecret;
    if (!secret) return next(new BrokerError("webhook_disabled"));
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (!verifySignature(secret, raw, req.get("x-hub-signature-256"))) return next(new BrokerError("invalid_signature"));
    // What the signature covers, to refuse a replayed push under a fresh (unsigned) delivery id.
    res.locals.bodyDigest = bodyDigest(raw);
    try {
      req.body = parseJsonObject(raw);
    } catch (error) {
      return next(error);
    }
    next();
  };
}

function handleDelivery(ctx: BrokerContext, queues: ReturnType<typeof createPushQueues>): RequestHandler {
  // Deliveries acted on inside this process only (cache drops: installation changes, a pushed
  // policy file), claimed here so a replay does not drop them again: each drop makes the next
  // /token pay for a fresh read or reader mint. In process: the caches they drop are this process's.
  const internal = createMemoryClaims({ now: ctx.now });
  const firstTime = async (res: Response) => (await internal.claim({ id: res.req.get("x-github-delivery"), bodyDigest: res.locals.bodyDigest as string }, null, null)) === "claimed";
  return async (req, res) => {
    const event = req.get("x-github-event")?.trim() ?? "";
    if (!/^[a-z0-9_.-]{1,100}$/i.test(event)) throw new BrokerError("invalid_request", { detail: "no X-GitHub-Event" });
    const deliveryId = req.get("x-github-delivery");
    const requestId = res.locals.requestId as string | undefined;
    const answer = (body: WebhookIgnoredResponse | WebhookPushResponse | WebhookPullRequestResponse, status = 200) => {
      ctx.metrics.webhookDeliveries.inc({ outcome: "ignored" in body ? "ignored" : "skipped" in body ? body.skipped : "queued" });
      sendJson(res, status, body);
    };

    if (event === "pull_request" && ctx.settings().policyCheckRuns) {
      // docs/design.md#decisions-where-the-contract-was-open: only with POLICY_CHECK_RUNS on is a pull_request acted on; answered first, checked
      // after, from the check-run queue, each delivery claimed as a push is (docs/security.md).
      const pr = readPolicyPullRequest(req.body as Record<string, unknown>);
      if (!pr) return void answer({ ok: true, event: "pull_request", skipped: "not_checked" });
      const settings = ctx.settings();
      const store = ctx.stores.get(settings.releasesKvUrl, "tokensmith-deliveries");
      const mark = { id: deliveryId, bodyDigest: res.locals.bodyDigest as string };
      const queued = await reportUnqueued(ctx, { event, delivery: deliveryId, repository: `${pr.owner}/${pr.repo}`, request_id: requestId }, async () => (await queues.get(settings.webhookQueueUrl)).checks.enqueue(pr, mark, store, ctx.stores.lockFor(settings.releasesKvUrl)));
      if (queued !== "queued") {
        ctx.log.info({ event, delivery: deliveryId, repository: `${pr.owner}/${pr.repo}`, request_id: requestId, seen: queued }, "pull_request delivery already acted on: not acted on again");
        return void answer({ ok: true, event: "pull_request", skipped: "duplicate_delivery", duplicate: true });
      }
      return void answer({ ok: true, event: "pull_request", queued: true, repository: `${pr.owner}/${pr.repo}`, number: pr.number, delivery: deliveryId ?? null }, 202);
    }
    if (event !== "push") {
      if ((event === "installation" || event === "installation_repositories") && (await firstTime(res))) {
        dropReadersOnInstallationChange(ctx, event, req.body); // internal: the answer stays `ignored`
        // The App's installations changed: "not installed" answers of that account go (internal; the answer stays the API's).
        // Shared answers too, so that every instance finds the App at once (not-installed-check.ts).
        const account = installationAccountId(req.body);
        ctx.notInstalled.dropOwner(account);
        await ctx.sharedLimits()?.dropOwner(account);
      }
      ctx.log.info({ event, delivery: deliveryId, request_id: requestId }, "webhook event ignored");
      return void answer({ ok: true, ignored: event });
    }
    // Internal, answer unchanged: a push that touches a policy file drops its cached read.
    if (isObject(req.body) && policyFilesPushed(req.body) && (await firstTime(res))) await dropPoliciesOnPush(ctx, req.body);
    const settings = ctx.settings();
    if (!settings.autoUpdateBranches) return void answer({ ok: true, event: "push", skipped: "auto_update_disabled" });
    const push = readPush(req.body as Record<string, unknown>);
    if ("skipped" in push) return void answer({ ok: true, event: "push", skipped: push.skipped });
    requireApp(settings.main);

    const store = ctx.stores.get(settings.releasesKvUrl, "tokensmith-deliveries");
    const queued = await reportUnqueued(ctx, { event, delivery: deliveryId, repository: push.repository, request_id: requestId }, async () => (await queues.get(settings.webhookQueueUrl)).push.enqueue(push, { id: deliveryId, bodyDigest: res.locals.bodyDigest as string }, store, ctx.stores.lockFor(settings.releasesKvUrl)));
    if (queued === "replayed") {
      // The same signed body under another id within the day: a replay, or a copy sent twice. Answered as a duplicate (docs/api.md#post-webhook).
      ctx.log.warn({ event, delivery: deliveryId, repository: push.repository, request_id: requestId }, "push body already seen under another delivery id: not acted on again");
      return void answer({ ok: true, event: "push", skipped: "duplicate_delivery", duplicate: true });
    }
    if (queued === "duplicate") {
      ctx.log.info({ event, delivery: deliveryId, repository: push.repository, request_id: requestId }, "redelivery acknowledged, not acted on twice");
      return void answer({ ok: true, event: "push", skipped: "duplicate_delivery", duplicate: true });
    }
    ctx.log.info({ event, delivery: deliveryId, repository: push.repository, branch: push.branch, request_id: requestId }, "push queued");
    answer({ ok: true, event: "push", queued: true, repository: push.repository, branch: push.branch, delivery: deliveryId ?? null }, 202);
  };
}

/**
 * A delivery the durable queue could not take (503 webhook_queue_unavailable) is lost unless someone
 * redelivers it: GitHub does not retry a failed delivery by itself. Logged at error level with its
 * delivery id, so the operator can redeliver it once Redis is back (docs/operations.md#redis-outages).
 */
async function reportUnqueued<T>(ctx: BrokerContext, delivery: { event: string; delivery: string | undefined; repository: string; request_id: string | undefined }, enqueue: () => Promise<T>): Promise<T> {
  try {
    return await enqueue();
  } catch (error) {
    if (error instanceof BrokerError && error.code === "webhook_queue_unavailable") {
      ctx.log.error({ ...delivery, code: error.code }, "webhook delivery not queued (WEBHOOK_QUEUE's Redis unavailable): redeliver it from the App's Recent Deliveries once Redis is back");
    }
    throw error;
  }
}

/** The account id of an installation delivery (`installation.account.id`); undefined when it names none. */
function installationAccountId(body: unknown): number | undefined {
  const id = (body as { installation?: { account?: { id?: unknown } } } | null)?.installation?.account?.id;
  return Number.isSafeInteger(id) ? (id as number) : undefined;
}
