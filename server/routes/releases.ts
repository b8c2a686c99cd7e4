import type { RequestHandler } from "express";
import type { BrokerContext } from "../context.js";
import { requireTriggerSecret } from "../http/bearer.js";
import { sendJson } from "../http/send-json.js";
import { createReleasesService } from "../releases/releases-service.js";
import { requireApp } from "../token/trust.js";

/**
 * GET /releases: the spec's ladder, top to bottom (DESIGN.md order of checks):
 * method (app.ts) → secret configured → bearer → App configured → cached aggregate or one crawl.
 */
export function releasesRoute(ctx: BrokerContext): RequestHandler[] {
  const service = createReleasesService(ctx);
  return [
    requireTriggerSecret(ctx, "releases_disabled"),
    async (_req, res) => {
      const settings = ctx.settings();
      const app = requireApp(settings.main);
      const answer = await service.releases(settings, app, res.locals.requestId as string | undefined);
      res.setHeader("Cache-Control", "no-store");
      sendJson(res, 200, answer);
    },
  ];
}
