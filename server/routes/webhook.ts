import type { RequestHandler } from "express";
import { BrokerError } from "../../shared/broker-error.js";
import type { WebhookIgnoredResponse, WebhookPushResponse } from "../../shared/types.js";
import type { BrokerContext } from "../context.js";
import { MIB, parseJsonObject, rawBody } from "../http/json-body.js";
import { sendJson } from "../http/send-json.js";
import { requireApp } from "../token/trust.js";
import { createDeliveryLog, type DeliveryLog } from "../webhook/deliveries.js";
import { mintForPush } from "../webhook/mint-for-push.js";
import { readPush } from "../webhook/read-push.js";
import { listingFailed, listOpenPullRequests, updatePullRequests } from "../webhook/update-pull-requests.js";
import { verifySignature } from "../webhook/verify-signature.js";

/** The platform's cap on a webhook payload (DESIGN.md body limits). */
export const WEBHOOK_BODY_LIMIT = 25 * MIB;

/**
 * POST /webhook, top to bottom (DESIGN.md order of checks): secret configured → raw body (413 over
 * the limit) → signature over the raw bytes → JSON → event. Only `push` is acted on, and only when
 * AUTO_UPDATE_BRANCHES is on: open pull requests on the pushed branch are brought up to date.
 */
export function webhookRoute(ctx: BrokerContext): RequestHandler[] {
  const deliveries = createDeliveryLog({ now: ctx.now });
  return [requireWebhookSecret(ctx), rawBody(WEBHOOK_BODY_LIMIT), verifyDelivery(ctx), handleDelivery(ctx, deliveries)];
}

function requireWebhookSecret(ctx: BrokerContext): RequestHandler {
  return (_req, _res, next) => next(ctx.settings().webhookSecret ? undefined : new BrokerError("webhook_disabled"));
}

function verifyDelivery(ctx: BrokerContext): RequestHandler {
  return (req, _res, next) => {
    const secret = ctx.settings().webhookSecret;
    if (!secret) return next(new BrokerError("webhook_disabled"));
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (!verifySignature(secret, raw, req.get("x-hub-signature-256"))) return next(new BrokerError("invalid_signature"));
    try {
      req.body = parseJsonObject(raw);
    } catch (error) {
      return next(error);
    }
    next();
  };
}

function handleDelivery(ctx: BrokerContext, deliveries: DeliveryLog): RequestHandler {
  return async (req, res) => {
    const event = req.get("x-github-event")?.trim() ?? "";
    if (!/^[a-z0-9_.-]{1,100}$/i.test(event)) throw new BrokerError("invalid_request", { detail: "no X-GitHub-Event" });
    const deliveryId = req.get("x-github-delivery");
    const requestId = res.locals.requestId as string | undefined;
    const answer = (body: WebhookIgnoredResponse | WebhookPushResponse) => sendJson(res, 200, body);

    if (event !== "push") {
      ctx.log.info({ event, delivery: deliveryId, request_id: requestId }, "webhook event ignored");
      return void answer({ ok: true, ignored: event });
    }
    const settings = ctx.settings();
    if (!settings.autoUpdateBranches) return void answer({ ok: true, event: "push", skipped: "auto_update_disabled" });
    const push = readPush(req.body as Record<string, unknown>);
    if ("skipped" in push) return void answer({ ok: true, event: "push", skipped: push.skipped });

    const platform = settings.main;
    const app = requireApp(platform);
    const store = ctx.stores.get(settings.releasesKvUrl, "tokensmith-deliveries");
    const tracked = deliveries.usable(deliveryId);
    if (tracked && !(await deliveries.claim(deliveryId, store))) {
      ctx.log.info({ event, delivery: deliveryId, repository: push.repository, request_id: requestId }, "redelivery acknowledged, not acted on twice");
      return void answer({ ok: true, event: "push", skipped: "duplicate_delivery", duplicate: true });
    }
    try {
      const minted = await mintForPush(ctx, platform, app, push);
      const upstream = { request: ctx.requestFor(platform), token: minted.token, retry: ctx.retry, log: ctx.log, requestId };
      const pulls = await listOpenPullRequests(upstream, push).catch((error: unknown) => {
        throw listingFailed(error);
      });
      const outcome = await updatePullRequests(upstream, push, pulls);
      if (tracked) await deliveries.done(deliveryId, store);
      ctx.log.info(
        { audit: "pull_requests_updated", delivery: deliveryId, repository: push.repository, branch: push.branch, installation_id: push.installationId, updated: outcome.updated.length, failed: outcome.failed.length, request_id: requestId },
        "push handled",
      );
      answer({ ok: true, event: "push", repository: push.repository, branch: push.branch, ...outcome });
    } catch (error) {
      if (tracked) deliveries.release(deliveryId);
      throw error;
    }
  };
}
