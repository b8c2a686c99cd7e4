import type { RequestListener } from "node:http";
import express, { type Express } from "express";
import { BrokerError } from "../shared/broker-error.js";
import { createContext, type BrokerContext, type BrokerDeps } from "./context.js";
import { bodyRules, createBodyBudget, type BodyBudget } from "./http/body-budget.js";
import { createRequestListener } from "./http/direct-route.js";
import { errorHandler, notFound, onlyMethod } from "./http/errors.js";
import { jsonObjectBody, KIB } from "./http/json-body.js";
import { BODY_BUDGETS, DEADLINE_RETRY_AFTER_S } from "./http/limits.js";
import { closeAfterAnswer } from "./http/lingering-close.js";
import { requestLog } from "./http/request-log.js";
import { admitSenders } from "./http/sender-admission.js";
import { releasesRoute } from "./routes/releases.js";
import { signRoute } from "./routes/sign.js";
import { tokenRoute } from "./routes/token.js";
import { webhookRoute } from "./routes/webhook.js";

export type BrokerApp = Express & {
  /** The injected parts, for scripts and tests that need to look inside (e.g. counters). */
  broker: BrokerContext;
  /** What the HTTP server calls: POST /token directly, everything else through Express. */
  listener: RequestListener;
  /** Bytes held now by each route's request bodies not yet authenticated (process-wide while one app serves). */
  unauthenticatedBodies: Record<keyof typeof BODY_BUDGETS, Pick<BodyBudget, "held" | "limit">>;
  /** Stops the webhook queue's work (see README), then closes key-value store connections. */
  close(): Promise<void>;
};

/**
 * Builds the broker's Express app from injected parts. Nothing here does I/O at build time (except
 * connecting to `WEBHOOK_QUEUE` when it is set, so its worker takes jobs at once); every cache
 * lives inside the returned app, so each test can build a fresh one.
 */
export function createApp(deps: BrokerDeps = {}): BrokerApp {
  const ctx = createContext(deps);
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("case sensitive routing", true);
  app.set("strict routing", true);
  app.set("query parser", false); // no route reads a query string

  const onError = errorHandler(ctx.log);
  const log = requestLog({
    log: ctx.log,
    now: ctx.now,
    metrics: ctx.metrics,
    deadlineMs: ctx.timing.requestDeadlineMs,
    onDeadline: (req, res) => {
      closeAfterAnswer(req, res); // the request may still be sending its body; late work must not answer on this connection
      onError(new BrokerError("deadline_exceeded", { retryAfter: DEADLINE_RETRY_AFTER_S }), req, res, () => {});
    },
  });
  // One budget per route: /webhook's bodies (25 MiB each) can never turn /token's (64 KiB) away.
  // /sign has none: it reads its body only after the bearer check.
  const budgets = { token: createBodyBudget(BODY_BUDGETS.token), webhook: createBodyBudget(BODY_BUDGETS.webhook) };
  const rulesOf = (budget: BodyBudget) => bodyRules({ budget, readTimeoutMs: ctx.timing.bodyReadTimeoutMs, now: ctx.now });
  const token = [rulesOf(budgets.token), onlyMethod("POST"), jsonObjectBody(64 * KIB), tokenRoute(ctx)];
  app.use(log);
  app.all("/token", ...token);
  app.all("/sign", onlyMethod("POST"), ...signRoute(ctx));
  app.all("/releases", onlyMethod("GET"), ...releasesRoute(ctx));
  const webhook = webhookRoute(ctx);
  app.all("/webhook", rulesOf(budgets.webhook), onlyMethod("POST"), ...webhook.handlers);
  app.use(notFound);
  app.use(onError);

  // Each sender held to its request rate before anything of its request is read (docs/operations.md#senders).
  const listener = admitSenders(createRequestListener(app, { path: "/token", handlers: [log, ...token], onError }), {
    limits: () => {
      const { senderRequestsPerSecond, trustProxyHops } = ctx.settings();
      return { rate: senderRequestsPerSecond, trustProxyHops };
    },
    now: ctx.now,
    log: ctx.log,
    onLimited: (outcome, route) => ctx.metrics.sendersLimited.inc({ outcome, route }),
  });
  return Object.assign(app, { broker: ctx, listener, unauthenticatedBodies: budgets, close: async () => {
    await webhook.close();
    await ctx.close();
  } });
}
