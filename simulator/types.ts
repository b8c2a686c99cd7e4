// Shared types for the platform simulator. Kept in one module so route files added later can
// import the handler signature and the Simulator surface without import cycles.
import type { IncomingHttpHeaders } from "node:http";
import type { Link } from "./link.js";
import type { KeyObject, webcrypto } from "node:crypto";
import type { GraphqlRegistry } from "./graphql-endpoint.js";
import type { GitApi } from "./git-state.js";
import type { ReleasesApi } from "./releases-state.js";
import type { SecondaryLimits } from "./secondary-limits.js";

export type Flavor = "cloud" | "enterprise";
export type PermissionLevel = "read" | "write" | "admin";

/** How the simulator judged a request's Authorization header when it arrived. */
export type RequestAuth =
  | { kind: "app"; appId: string }
  | { kind: "installation"; token: string }
  | { kind: "none" }
  | { kind: "invalid"; reason: string };

export interface RecordedRequest {
  method: string;
  /** Path relative to `sim.url`, without the query string. */
  path: string;
  query: Record<string, string>;
  /** Lower-cased names (node:http already lower-cases them). */
  headers: IncomingHttpHeaders;
  /** Parsed JSON, the raw text when it is not JSON, undefined when empty. */
  body: unknown;
  auth: RequestAuth;
  /**
   * `Date.now()` once the request (its body included) was in, before it was handled: lets a test
   * compare when calls reached the platform (the calls of one points window, say).
   */
  receivedAt: number;
  /**
   * A REST request's `X-GitHub-Api-Version` (null: it named none, which GitHub takes as
   * 2022-11-28); absent for requests outside the REST API (OIDC issuer, runner, GraphQL).
   */
  apiVersion?: string | null;
  /** Filled in once answered (absent for hang/reset faults): lets tests compare what was sent back. */
  response?: {
    status: number;
    headers: Record<string, string>;
    body: unknown;
    /** Bytes of this answer on the socket: status line, headers and body as sent (gzip-compressed when asked). */
    wireBytes: number;
  };
}

export interface RouteResult {
  status: number;
  headers?: Record<string, string>;
  /** Objects/arrays are sent as JSON; strings are sent as-is; undefined sends no body. */
  body?: unknown;
}

export interface RouteContext {
  method: string;
  path: string;
  params: Record<string, string>;
  query: Record<string, string>;
  body: unknown;
  auth: RequestAuth;
  headers: IncomingHttpHeaders;
  sim: Simulator;
}

export type RouteHandler = (ctx: RouteContext) => RouteResult | Promise<RouteResult>;

/**
 * "truncated-gzip": the route's own answer, gzip-compressed whatever the request asked, and only
 * the first half of the compressed bytes sent (with a Content-Length that matches them): the HTTP
 * exchange completes, the gzip stream does not.
 */
export type FaultResponse = { status: number; headers?: Record<string, string>; body?: unknown } | "hang" | "garbage" | "reset" | "truncated-gzip" | HeldAnswer;

/**
 * The route answers now (a mint issues its token over the installation as it is at this moment),
 * but the answer is sent only once `until` settles: a slow answer that a test can interleave with
 * other events (an installation change while the broker waits for a mint).
 */
export interface HeldAnswer {
  until: Promise<unknown>;
}

export interface FaultSpec {
  method?: string;
  /** Matched against the full path relative to `sim.url` (no query): exact string or RegExp. */
  path: string | RegExp;
  /** Default Infinity. */
  times?: number;
  /**
   * Only requests made with a token of this installation (a rate limit is one installation's):
   * the fault then ignores every other caller. Default: any caller.
   */
  installationId?: number;
  /**
   * Only requests whose parsed JSON body this accepts, e.g. one kind of mint among the
   * `access_tokens` requests (tokensmith/testing's `isPolicyReaderMint`). Default: any body.
   */
  body?: (body: unknown) => boolean;
  respond: FaultResponse;
}

export interface FaultHandle {
  remove(): void;
  /** How many more times it will fire. */
  readonly remaining: number;
}

export interface FaultRegistry {
  add(spec: FaultSpec): FaultHandle;
  clear(): void;
  readonly active: readonly FaultSpec[];
}

/** The claims GitHub Actions puts in its OIDC tokens (the subset the simulator defaults). */
export interface Claims {
  iss: string;
  aud: string | string[];
  sub: string;
  repository: string;
  repository_owner: string;
  repository_id: string;
  repository_owner_id: string;
  ref: string;
  sha: string;
  run_id: string;
  run_attempt: string;
  workflow: string;
  run_number: string;
  workflow_ref: string;
  workflow_sha: string;
  /** The workflow file the job runs (a reusable workflow's own ref when the job calls one). */
  job_workflow_ref: string;
  job_workflow_sha: string;
  actor: string;
  actor_id: string;
  event_name: string;
  /** `branch` or `tag`. */
  ref_type: string;
  ref_protected: string;
  head_ref: string;
  base_ref: string;
  repository_visibility: string;
  runner_environment: string;
  /** Only when the job names an environment (absent otherwise, as GitHub does). */
  environment?: string;
  jti: string;
  iat: number;
  nbf: number;
  exp: number;
}

/** Anything node:crypto or jose hands out, or a raw secret for HS* algorithms. */
export type SigningKey = KeyObject | webcrypto.CryptoKey | Uint8Array | string;

export interface SignOptions {
  /** Override the kid header; null omits it. */
  kid?: string | null;
  /** Extra protected-header fields (jku, x5u, jwk, crit...). */
  header?: Record<string, unknown>;
  privateKey?: SigningKey;
  /** Default RS256. HS* without privateKey uses the current public key PEM as the secret. */
  alg?: string;
}

export interface OidcKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicKeyPem: string;
  publicJwk: { kty: "RSA"; alg: "RS256"; use: "sig"; kid: string; n: string; e: string };
}

export type KeyEndpointMode = "ok" | "fail" | "hang" | "garbage";

export interface OidcIssuer {
  readonly issuer: string;
  readonly jwksUri: string;
  readonly currentKey: OidcKey;
  /** Every key the JWKS publishes right now (current first). */
  readonly keys: readonly OidcKey[];
  keyEndpoint: KeyEndpointMode;
  readonly jwksRequests: number;
  sign(claims?: Partial<Claims> & Record<string, unknown>, opts?: SignOptions): Promise<string>;
  rotateKey(opts?: { keepOld?: boolean }): OidcKey;
}

export interface ActionsRunner {
  readonly requestUrl: string;
  readonly requestToken: string;
  /** Merged over the default claims of every token the endpoint hands out. */
  claims: Partial<Claims> & Record<string, unknown>;
}

export interface AppState {
  id: number;
  slug: string;
  privateKeyPem: string;
  publicKey: KeyObject;
}

export interface RepositoryState {
  id: number;
  owner: string;
  ownerId: number;
  name: string;
  fullName: string;
  /**
   * The form of its jobs' OIDC `sub`: "immutable" as for a repository created, renamed or
   * transferred on github.com after 2026-06-18 (or opted in). Unset: the simulator's `subjectFormat`.
   */
  subjectFormat?: SubjectFormat;
}

/**
 * An installation token's format: "stateless" (`ghs_<app id>_<JWT>`, ~520 characters, two dots;
 * github.com's from 2026-04-27) or "classic" (`ghs_` + 36 letters and digits; GHES's).
 */
export type TokenFormat = "stateless" | "classic";

/**
 * The form of a job's OIDC `sub`: "classic" `repo:<owner>/<repo>:ref:…` or "immutable"
 * `repo:<owner>@<owner id>/<repo>@<repo id>:ref:…` (github.com, new, renamed and transferred
 * repositories from 2026-06-18).
 */
export type SubjectFormat = "classic" | "immutable";

export interface InstallationState {
  id: number;
  appId: number;
  account: string;
  accountId: number;
  permissions: Record<string, string>;
  repositories: string[] | "all";
  createdAt: Date;
}

export interface IssuedToken {
  installationId: number;
  permissions: Record<string, string>;
  /** The names in the installation's account the token covers (`["app"]`), or `"all"`: the form of tokensmith/testing's `Mint.repositories`. */
  repositories: string[] | "all";
  expiresAt: Date;
  revoked: boolean;
}

export interface AddInstallationOptions {
  appId: number;
  account: string;
  permissions: Record<string, PermissionLevel>;
  repositories: string[] | "all";
  id?: number;
}

export interface Simulator {
  readonly flavor: Flavor;
  readonly url: string;
  readonly apiBase: string;
  readonly graphqlUrl: string;
  latencyMs: number;
  /**
   * Whether answers to installation tokens carry GitHub's `x-ratelimit-*` headers (limit 5,000 an
   * hour, the simulator's count). GitHub always sends them; off by default here, since the
   * simulator does not refuse past the limit and a long bench run's `remaining: 0` would pause the
   * broker for the rest of the hour.
   */
  rateLimitHeaders: boolean;
  /** The emulated link in front of the simulator (`link` option): its settings and byte counts. */
  readonly link: Link | undefined;
  /** The format of the installation tokens it mints from now on (the `tokenFormat` option's value at first). */
  tokenFormat: TokenFormat;
  /** The `sub` form of a repository with no `subjectFormat` of its own (the `subjectFormat` option's value at first). */
  subjectFormat: SubjectFormat;
  /** Added to Date.now() wherever the simulated platform checks time (App JWTs, token expiry). */
  clockOffsetMs: number;
  readonly requests: RecordedRequest[];
  /** GitHub's secondary limits (values in force), requests in flight now and their peak: see secondary-limits.ts. */
  readonly limits: SecondaryLimits;
  /**
   * Requests counted against an installation's primary (hourly) rate limit since the simulator
   * started: every answer to one of its tokens but a 304 (a 404 counts). Counted, not enforced.
   */
  primaryRateLimitUsed(installationId: number): number;
  clearRequests(): void;
  /**
   * Bytes written to clients for every answer since the simulator started (status lines, headers,
   * bodies as sent): never reset, so a test or the bench reads it before and after.
   */
  readonly wireBytes: number;
  readonly faults: FaultRegistry;
  readonly oidc: OidcIssuer;
  readonly actions: ActionsRunner;

  createApp(opts?: { id?: number; keyFormat?: "pkcs1" | "pkcs8" }): { id: number; privateKeyPem: string };
  readonly apps: Map<number, AppState>;
  addInstallation(opts: AddInstallationOptions): number;
  readonly installations: Map<number, InstallationState>;
  installation(id: number): InstallationState;
  removeInstallation(id: number): void;
  /** Get or create a repository (stable ids per name). */
  repository(owner: string, name: string): RepositoryState;
  /** The repository if it exists; never creates one (a read of a missing repository is GitHub's 404). */
  findRepository(owner: string, name: string): RepositoryState | undefined;
  /** Rename an account: same id, new login; its repositories and installations follow, the old login is free. */
  renameAccount(from: string, to: string): void;
  /** Delete a repository (it leaves installations' selections); re-creating the name gives a new id. */
  deleteRepository(owner: string, name: string): void;
  readonly tokens: Map<string, IssuedToken>;
  /** Mint a token directly (no HTTP), e.g. to seed a test. */
  issueToken(installationId: number, opts?: { permissions?: Record<string, string>; repositories?: string[] | "all" }): string;
  now(): number;

  /** Add a REST route under `apiBase` (a request naming an unsupported API version is answered 400 first); later registrations win over earlier ones. */
  route(method: string, pattern: string, handler: RouteHandler): void;
  /** The route table: every method and pattern the simulator answers (patterns as added, `/api/v3` included on GHES). */
  routes(): Array<{ method: string; pattern: string }>;
  /** Add a route at a path relative to `url` (e.g. GraphQL, which is outside /api/v3 on GHES). */
  routeAbsolute(method: string, pattern: string, handler: RouteHandler): void;
  requireApp(ctx: RouteContext): AppState;
  requireInstallation(ctx: RouteContext): { token: string; issued: IssuedToken; installation: InstallationState };

  close(): Promise<void>;

  /** The GraphQL endpoint's registry: Repository fields and mutations added by feature modules. */
  graphql: GraphqlRegistry;

  /** Branches, commits and pull requests: see git-state.ts. */
  git: GitApi;

  /** Releases per repository: see releases-state.ts. */
  releases: ReleasesApi;
}
