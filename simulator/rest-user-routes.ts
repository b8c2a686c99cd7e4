// `GET /users/{username}` for an App's bot (`<slug>[bot]`: what a job looks up to set git's
// author to the bot) and `GET /rate_limit` (what a careful job checks before a batch of calls).
// https://docs.github.com/rest/users/users#get-a-user
// https://docs.github.com/rest/rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user
import { DOCS_ROOT, githubError } from "./router.js";
import { botUserId } from "./rest-git-data-routes.js";
import { simpleUserJson } from "./rest-shapes.js";
import type { Simulator } from "./types.js";

const DOC_USER = `${DOCS_ROOT}/users/users#get-a-user`;
/** An installation's hourly REST limit (GitHub's floor for an installation on a non-Enterprise account). */
export const INSTALLATION_LIMIT = 5000;

export function registerUserRoutes(sim: Simulator): void {
  sim.route("GET", "/users/:username", (ctx) => {
    const username = ctx.params.username ?? "";
    const app = [...sim.apps.values()].find((a) => `${a.slug}[bot]`.toLowerCase() === username.toLowerCase());
    if (!app) throw githubError(404, "Not Found", DOC_USER);
    const stamp = "2020-01-01T00:00:00Z";
    return {
      status: 200,
      body: {
        ...simpleUserJson(`${app.slug}[bot]`, botUserId(app.id), "Bot", { apiBase: sim.apiBase, url: sim.url }),
        node_id: `BOT_${Buffer.from(String(botUserId(app.id))).toString("base64url")}`,
        name: null,
        company: null,
        blog: "",
        location: null,
        email: null,
        hireable: null,
        bio: null,
        twitter_username: null,
        public_repos: 0,
        public_gists: 0,
        followers: 0,
        following: 0,
        created_at: stamp,
        updated_at: stamp,
      },
    };
  });

  sim.route("GET", "/rate_limit", (ctx) => {
    const { installation } = sim.requireInstallation(ctx);
    const reset = Math.floor(sim.now() / 3_600_000 + 1) * 3600;
    const used = sim.primaryRateLimitUsed(installation.id);
    const bucket = (limit: number, spent = 0) => ({ limit, used: spent, remaining: Math.max(0, limit - spent), reset });
    const core = bucket(INSTALLATION_LIMIT, used);
    return {
      status: 200,
      body: {
        resources: { core, graphql: bucket(INSTALLATION_LIMIT), search: bucket(30), integration_manifest: bucket(5000), code_search: bucket(10) },
        rate: core,
      },
    };
  });
}
