import type { RequestListener } from "node:http";
import express, { type Express } from "express";
import { createContext, type BrokerContext, type BrokerDeps } from "./context.js";
import { createRequestListener } from "./http/direct-route.js";
import { errorHandler, notFound, onlyMethod } from "./http/errors.js";
import { jsonObjectBody, KIB } from "./http/json-body.js";
import { requestLog } from "./http/request-log.js";
import { releasesRoute } from "./routes/releases.js";
import { signRoute } from "./routes/sign.js";
import { tokenRoute } from "./routes/token.js";
import { webhookRoute } from "./routes/webhook.js";

export type BrokerApp = Express & {
  /** The injected parts, for scripts and tests that need to look inside (e.g. counters). */
  broker: BrokerContext;
  /** What the HTTP server calls: POST /token directly, everything else through Express. */
  listener: RequestListener;
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

  const log = requestLog(ctx.log, ctx.now);
  const token = [onlyMethod("POST"), jsonObjectBody(64 * KIB), tokenRoute(ctx)];
  const onError = errorHandler(ctx.log);
  app.use(log);
  app.all("/token", ...token);
  app.all("/sign", onlyMethod("POST"), ...signRoute(ctx));
  app.all("/releases", onlyMethod("GET"), ...releasesRoute(ctx));
  const webhook = webhookRoute(ctx);
  app.all("/webhook", onlyMethod("POST"), ...webhook.handlers);
  app.use(notFound);
  app.use(onError);

  const listener = createRequestListener(app, { path: "/token", handlers: [log, ...token], onError });
  return Object.assign(app, { broker: ctx, listener, close: async () => {
    await webhook.close();
    await ctx.close();
  } });
}
