// Wires one simulated platform together: one loopback server serving the OIDC issuer, the
// Actions ID-token endpoint and the REST API (under /api/v3 for the enterprise flavor).
import { createActionsRunner } from "./actions-runner.js";
import { createFaultTable } from "./faults.js";
import { createGraphqlEndpoint } from "./graphql-endpoint.js";
import { registerGit } from "./git-state.js";
import { registerReleases } from "./releases-state.js";
import { GithubState } from "./github-state.js";
import { startHttpServer } from "./http-server.js";
import { startLink, type Link, type LinkOptions } from "./link.js";
import { ensureSpareKeys } from "./key-pool.js";
import { createOidcIssuer } from "./oidc-issuer.js";
import { judgeAuthorization, requireApp, requireInstallation } from "./request-auth.js";
import { registerAppRoutes } from "./rest-app-routes.js";
import { registerInstallationRoutes } from "./rest-installation-routes.js";
import { registerUserRoutes } from "./rest-user-routes.js";
import { Router } from "./router.js";
import { createSecondaryLimits, type SecondaryLimitValues } from "./secondary-limits.js";
import { INSTALLATION_LIMIT as INSTALLATION_RATE_LIMIT } from "./rest-user-routes.js";
import type { Flavor, RecordedRequest, RouteHandler, Simulator, SubjectFormat, TokenFormat } from "./types.js";

export interface SimulatorOptions {
  flavor?: Flavor;
  latencyMs?: number;
  /**
   * GitHub's secondary limits (secondary-limits.ts), GitHub's values by default. Only a throughput
   * bench may loosen them (it measures the broker, not the platform's budget); a test never does.
   */
  secondaryLimits?: Partial<SecondaryLimitValues>;
  /**
   * Put an emulated network link (link.ts: round-trip time, bandwidth, connection set-up) between
   * every client and the simulator: its URLs (API, GraphQL, issuer) are the link's.
   */
  link?: LinkOptions;
  /**
   * The installation tokens' format: "stateless" (default: what github.com mints since 2026-04-27,
   * ~520 characters) or "classic" (`ghs_` + 36 characters, as GHES and github.com before).
   */
  tokenFormat?: TokenFormat;
  /**
   * The OIDC `sub` form of every repository not marked otherwise (`sim.repository(o, r).subjectFormat`):
   * "classic" (default: every repository that existed before 2026-06-18) or "immutable".
   */
  subjectFormat?: SubjectFormat;
}

/** Where each service lives, relative to the server URL, per flavor (github.com vs GHES). */
const LAYOUT = {
  cloud: { api: "", graphql: "/graphql", issuer: "/oidc" },
  enterprise: { api: "/api/v3", graphql: "/api/graphql", issuer: "/_services/token" },
} as const;

export async function createSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const flavor = opts.flavor ?? "cloud";
  const layout = LAYOUT[flavor];
  // The issuer key plus one App key, generated in parallel before anything needs them.
  await ensureSpareKeys(2);

  const router = new Router();
  const faults = createFaultTable();
  const requests: RecordedRequest[] = [];
  let clockOffsetMs = 0;
  const now = () => Date.now() + clockOffsetMs;
  const state = new GithubState(now);
  let latencyMs = opts.latencyMs ?? 0;
  let rateLimitHeaders = false;
  let tokenFormat: TokenFormat = opts.tokenFormat ?? "stateless";
  let subjectFormat: SubjectFormat = opts.subjectFormat ?? "classic";
  // Assigned once the server knows its port; handlers only read it after that.
  let sim: Simulator;

  const limits = createSecondaryLimits(
    now,
    (auth) => {
      if (auth.kind === "app") return `app:${auth.appId}`;
      if (auth.kind === "installation") return `installation:${state.tokens.get(auth.token)?.installationId ?? auth.token}`;
      return null;
    },
    opts.secondaryLimits,
  );
  // GitHub's primary rate limit, counted (not enforced): every answer to an installation token
  // spends one request of that installation's hourly limit, a 404 included, except a 304 to a
  // conditional request ("does not count against your primary rate limit if a 304 response is
  // returned"): https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#use-conditional-requests-if-appropriate
  const primaryUsed = new Map<number, number>();
  const server = await startHttpServer({
    limits,
    answered: (record) => {
      if (record.auth.kind !== "installation" || record.response?.status === 304) return;
      const installationId = state.tokens.get(record.auth.token)?.installationId;
      if (installationId !== undefined) primaryUsed.set(installationId, (primaryUsed.get(installationId) ?? 0) + 1);
    },
    // GitHub's primary-limit headers on every answer to an installation token, this one counted
    // (the count is the simulator's: it does not refuse past the limit).
    // https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#checking-the-status-of-your-rate-limit
    extraHeaders: (record, status) => {
      if (!rateLimitHeaders || record.auth.kind !== "installation") return undefined;
      const installationId = state.tokens.get(record.auth.token)?.installationId;
      if (installationId === undefined) return undefined;
      const used = (primaryUsed.get(installationId) ?? 0) + (status === 304 ? 0 : 1);
      return {
        "x-ratelimit-limit": String(INSTALLATION_RATE_LIMIT),
        "x-ratelimit-remaining": String(Math.max(0, INSTALLATION_RATE_LIMIT - used)),
        "x-ratelimit-used": String(used),
        "x-ratelimit-reset": String(Math.floor(now() / 3_600_000 + 1) * 3600),
        "x-ratelimit-resource": "core",
      };
    },
    router,
    faults,
    requests,
    judge: (authorization) => judgeAuthorization(authorization, state, now()),
    latencyMs: () => latencyMs,
    sim: () => sim,
  });
  const link: Link | undefined = opts.link ? await startLink({ port: Number(new URL(server.url).port) }, opts.link) : undefined;
  const url = link?.url ?? server.url;
  const apiBase = `${url}${layout.api}`;
  const oidc = createOidcIssuer({
    issuer: `${url}${layout.issuer}`, issuerPath: layout.issuer, router, requests, now,
    idsOf: (owner, name) => state.idsOf(owner, name),
    subjectFormatOf: (owner, name) => state.findRepository(owner, name)?.subjectFormat ?? subjectFormat,
  });
  const actions = createActionsRunner(url, router, oidc);

  sim = {
    flavor,
    url,
    apiBase,
    graphqlUrl: `${url}${layout.graphql}`,
    get rateLimitHeaders() {
      return rateLimitHeaders;
    },
    set rateLimitHeaders(on: boolean) {
      rateLimitHeaders = on;
    },
    get latencyMs() {
      return latencyMs;
    },
    set latencyMs(ms: number) {
      latencyMs = ms;
    },
    get tokenFormat() {
      return tokenFormat;
    },
    set tokenFormat(format: TokenFormat) {
      tokenFormat = format;
    },
    get subjectFormat() {
      return subjectFormat;
    },
    set subjectFormat(format: SubjectFormat) {
      subjectFormat = format;
    },
    get clockOffsetMs() {
      return clockOffsetMs;
    },
    set clockOffsetMs(ms: number) {
      clockOffsetMs = ms;
    },
    requests,
    limits,
    primaryRateLimitUsed: (installationId) => primaryUsed.get(installationId) ?? 0,
    clearRequests: () => {
      requests.length = 0; // same array: callers holding sim.requests keep seeing the live log
    },
    get wireBytes() {
      return server.wireBytes;
    },
    faults,
    oidc,
    actions,
    createApp: (appOpts) => state.createApp(appOpts),
    apps: state.apps,
    addInstallation: (instOpts) => state.addInstallation(instOpts),
    installations: state.installations,
    installation: (id) => state.installation(id),
    removeInstallation: (id) => state.removeInstallation(id),
    repository: (owner, name) => state.repository(owner, name),
    findRepository: (owner, name) => state.findRepository(owner, name),
    renameAccount: (from, to) => state.renameAccount(from, to),
    deleteRepository: (owner, name) => state.deleteRepository(owner, name),
    tokens: state.tokens,
    issueToken: (installationId, tokenOpts = {}) => {
      const inst = state.installation(installationId);
      const repositories = tokenOpts.repositories ?? (inst.repositories === "all" ? "all" : [...inst.repositories]);
      return state.issueToken(installationId, tokenOpts.permissions ?? { ...inst.permissions }, repositories, tokenFormat).token;
    },
    now,
    route: (method: string, pattern: string, handler: RouteHandler) => router.add(method, `${layout.api}${pattern}`, handler, { rest: true }),
    routeAbsolute: (method: string, pattern: string, handler: RouteHandler) => router.add(method, pattern, handler),
    routes: () => router.routes(),
    requireApp: (ctx) => requireApp(ctx, state),
    requireInstallation: (ctx) => requireInstallation(ctx, state),
    link,
    close: async () => {
      await link?.close();
      await server.close();
    },
    graphql: undefined as unknown as Simulator["graphql"],
    git: undefined as unknown as Simulator["git"],
    releases: undefined as unknown as Simulator["releases"],
  };

  // GraphQL: one endpoint; feature modules add Repository fields and mutations to its registry.
  const graphql = createGraphqlEndpoint(sim);
  sim.graphql = graphql.registry;
  router.add("POST", layout.graphql, graphql.handle);

  // Feature modules: each owns its state, REST routes and GraphQL fields.
  sim.git = registerGit(sim);

  sim.releases = registerReleases(sim);

  registerAppRoutes(sim, state);
  registerInstallationRoutes(sim, state);
  registerUserRoutes(sim);
  return sim;
}
