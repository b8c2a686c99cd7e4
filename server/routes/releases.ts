import type { RequestHandler } from "express";
import type { BrokerContext } from "../context.js";
import { requireTriggerSecret } from "../http/bearer.js";
import type { ReleasesResponse, RepoReleases } from "../../shared/types.js";
import { sendJsonText } from "../http/send-json.js";
import { createReleasesService } from "../releases/releases-service.js";
import { requireApp } from "../token/trust.js";

/**
 * GET /releases: the ladder, top to bottom (docs/design.md#order-of-checks):
 * method (app.ts) → secret configured → bearer → App configured → cached aggregate (fresh, or stale
 * while a refresh runs or the platform's budget is spent) or one crawl.
 */
export function releasesRoute(ctx: BrokerContext): RequestHandler[] {
  const service = createReleasesService(ctx);
  return [
    requireTriggerSecret(ctx, "releases_disabled"),
    async (_req, res) => {
      const settings = ctx.settings();
      const app = requireApp(settings.main);
      const answer = await service.releases(settings, app, res.locals.requestId as string | undefined, res.locals.deadlineAt as number | undefined);
      res.setHeader("Cache-Control", "no-store");
      sendJsonText(res, 200, releasesJson(answer));
    },
  ];
}

/**
 * The repositories' part of an answer, serialised once per aggregate object: with a memory://
 * LEGACY_QUOTA_KV every cached answer carries the same array, and a fleet's aggregate is the bulk
 * of the answer (`npm run bench -- releases`, cached answer). A store that hands back a new
 * object per read (Redis) serialises each time, as before.
 */
const reposJson = new WeakMap<readonly RepoReleases[], string>();

/** Exactly JSON.stringify(answer), the repositories taken from the memo (`stale` and `age_seconds` only when set). */
export function releasesJson(answer: ReleasesResponse): string {
  let repos = reposJson.get(answer.repos);
  if (repos === undefined) {
    repos = JSON.stringify(answer.repos);
    reposJson.set(answer.repos, repos);
  }
  return `{"generated_at":${JSON.stringify(answer.generated_at)},"repos":${repos},"truncated":${JSON.stringify(answer.truncated)},"cached":${JSON.stringify(answer.cached)}${answer.stale ? `,"stale":true,"age_seconds":${JSON.stringify(answer.age_seconds ?? 0)}` : ""}}`;
}
