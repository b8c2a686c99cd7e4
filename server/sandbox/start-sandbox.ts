/// <reference lib="esnext.disposable" preserve="true" />
// A whole CI platform on loopback for trying tokensmith or testing a release workflow: the platform
// simulator (OIDC issuer, GitHub REST and GraphQL, the runner's ID-token endpoint) seeded with a
// world, and a broker pointed at it. Every token it hands out is fake and only this process's
// simulator accepts it; nothing it starts talks to anything but 127.0.0.1.
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { Writable } from "node:stream";
import { createSimulator, DEFAULT_SHA, type Claims, type Link, type LinkOptions, type Simulator, type SimulatorOptions } from "../../simulator/index.js";
import { createApp } from "../app.js";
import { serve } from "../http/serve.js";
import { dropPoliciesOnPush, dropReadersOnInstallationChange } from "../policy/drop-on-push.js";
import { createLogger } from "../log.js";
import { LOG_LEVELS, parseLogLevel } from "../start-settings.js";
import { createPlatformView, type PlatformView } from "./platform-view.js";
import { runBundledStep } from "./run-bundled-action.js";
import { DEFAULT_WORLD, parseWorld, seedWorld, type World } from "./world.js";

export type { World, WorldRepository } from "./world.js";
export type { PlatformView, Mint, Revocation, SignedCommit, BranchUpdate, Release } from "./platform-view.js";

/** Said wherever the sandbox prints: its credentials open nothing outside this process. */
export const FAKE_NOTICE = "sandbox: every token and secret here is fake";

export interface SandboxOptions {
  /** The world to seed (default: {@link DEFAULT_WORLD}); checked like `--world FILE`. */
  world?: World;
  /** The broker's port on 127.0.0.1 (default 0: a free one). The simulator always takes a free one. */
  port?: number;
  /**
   * More broker settings (e.g. `SIGN_ALLOWED_REPOSITORIES`), over the sandbox's own. `LOG_LEVEL`
   * sets the level of {@link Sandbox.logs} (default `info`; `debug` adds a line per call the broker
   * makes upstream); a level pino does not have rejects the start.
   */
  env?: Record<string, string>;
  /**
   * Put an emulated network link between the broker (and the runner) and the platform: every byte
   * to and from the simulator waits `rttMs` ÷ 2 each way, crosses at `mbit` megabits per second,
   * and each new connection waits one round trip first (a TCP handshake). Default: none (loopback).
   */
  link?: LinkOptions;
  /**
   * The installation tokens' format: "stateless" (default: `ghs_<app id>_<JWT>`, ~520 characters,
   * as github.com mints since 2026-04-27) or "classic" (`ghs_` + 36 characters, as GHES).
   */
  tokenFormat?: SimulatorOptions["tokenFormat"];
  /**
   * The form of every job's OIDC `sub`: "classic" (default, `repo:owner/name:ref:…`) or
   * "immutable" (`repo:owner@id/name@id:ref:…`, github.com's for repositories created, renamed or
   * transferred from 2026-06-18). docs/policies.md#matching-sub says how a policy matches both.
   */
  subjectFormat?: SimulatorOptions["subjectFormat"];
}

/**
 * The claims GitHub Actions puts in a job's OIDC token, by GitHub's names and value forms
 * (https://docs.github.com/actions/reference/security/oidc#oidc-token-claims). Every value is a
 * string but the times (`iat`, `nbf`, `exp`: seconds since the epoch) and `aud`.
 */
export interface GitHubOidcClaims {
  iss: string;
  aud: string | string[];
  /** GitHub builds it from the others (environment, pull request or ref) unless set. */
  sub: string;
  jti: string;
  iat: number;
  nbf: number;
  exp: number;
  /** `owner/name`. */
  repository: string;
  repository_owner: string;
  repository_id: string;
  repository_owner_id: string;
  repository_visibility: "public" | "private" | "internal";
  /** Only for a repository of an enterprise's organisation. */
  enterprise?: string;
  enterprise_id?: string;
  /** `refs/heads/…`, `refs/tags/…` or `refs/pull/…/merge`. */
  ref: string;
  /** Follows `ref` unless set. */
  ref_type: "branch" | "tag";
  ref_protected: "true" | "false";
  sha: string;
  /** A pull request's head and base branches (empty otherwise). */
  head_ref: string;
  base_ref: string;
  /** The event that started the workflow: `push`, `pull_request`, `workflow_dispatch`, `release`, … */
  event_name: string;
  /** The workflow's name. */
  workflow: string;
  /** `owner/name/.github/workflows/<file>@<ref>`. */
  workflow_ref: string;
  workflow_sha: string;
  /** The workflow file the job runs (a reusable workflow's own ref when the job calls one); follows `workflow_ref` unless set. */
  job_workflow_ref: string;
  job_workflow_sha: string;
  run_id: string;
  run_number: string;
  run_attempt: string;
  actor: string;
  actor_id: string;
  /** Only when the job names an environment (absent otherwise, as GitHub does). */
  environment?: string;
  environment_node_id?: string;
  runner_environment: "github-hosted" | "self-hosted";
}

/**
 * The claims of one CI job's OIDC token: any of GitHub's by its own name (the rest are the
 * defaults, docs/sandbox.md#a-jobs-claims), a claim set to `undefined` left out, and claims GitHub
 * does not define (a custom `sub` template's, a test of a stray claim) under `custom`, merged in last as they are.
 * A name GitHub does not use (`event` for `event_name`) is refused: it does not compile, and
 * from JavaScript `mintJobToken`/`runAction` throw a TypeError naming it.
 */
export interface JobClaims extends Partial<Omit<GitHubOidcClaims, "aud">> {
  /** `owner/name` (default: the world's first repository). */
  repository?: string;
  /** Default `refs/heads/main`. */
  ref?: string;
  /** The workflow's name (default `release`; `workflow_ref` follows it: `.github/workflows/<workflow>.yml`). */
  workflow?: string;
  /** The `aud` claim. Default `tokensmith`, the broker's default audience. */
  audience?: string | string[];
  /** Claims that are none of GitHub's, merged in last, as they are (they may also override one of GitHub's with a value of any type). */
  custom?: Record<string, unknown>;
}

/** Every name {@link JobClaims} takes: GitHub's claims, `audience` and `custom` (the `satisfies` keeps it complete). */
const JOB_CLAIM_NAMES: ReadonlySet<string> = new Set(Object.keys({
  iss: true, sub: true, jti: true, iat: true, nbf: true, exp: true, repository: true, repository_owner: true,
  repository_id: true, repository_owner_id: true, repository_visibility: true, enterprise: true,
  enterprise_id: true, ref: true, ref_type: true, ref_protected: true, sha: true, head_ref: true,
  base_ref: true, event_name: true, workflow: true, workflow_ref: true, workflow_sha: true,
  job_workflow_ref: true, job_workflow_sha: true, run_id: true, run_number: true, run_attempt: true,
  actor: true, actor_id: true, environment: true, environment_node_id: true, runner_environment: true,
  audience: true, custom: true,
} satisfies Record<keyof JobClaims, true>));

/** A TypeError for a name {@link JobClaims} does not take (for JavaScript callers; TypeScript refuses it at compile time). */
function checkJobClaims(job: object): void {
  for (const name of Object.keys(job)) {
    if (JOB_CLAIM_NAMES.has(name)) continue;
    const near = [...JOB_CLAIM_NAMES].find((known) => known !== "custom" && (known.startsWith(`${name}_`) || known.endsWith(`_${name}`) || name.replace(/[-_]/g, "").toLowerCase() === known.replace(/_/g, "")));
    throw new TypeError(`job claim "${name}" is none of GitHub's${near ? ` (did you mean "${near}"?)` : ""}; put a claim of your own under custom: { ${JSON.stringify(name)}: … }`);
  }
}

/** The action's seven outputs (docs/action.md#outputs), each absent when the step did not set it (a failed step sets none). */
export interface ActionOutputs {
  /** The installation token (masked in the log). */
  token?: string;
  /** When it expires, ISO 8601 UTC (`2026-11-27T12:00:00Z`). */
  "expires-at"?: string;
  /** `owner/name` of the job's repository. */
  repository?: string;
  /** Every repository the token covers (`owner/name`, comma-separated, the job's first). */
  repositories?: string;
  /** The App's installation id (decimal). */
  "installation-id"?: string;
  /** The App's slug: its bot is `<slug>[bot]`. */
  "app-slug"?: string;
  /** The token's permissions as JSON (`{"contents":"write"}`). */
  permissions?: string;
}

export interface ActionRun {
  /** The step's outputs as the runner read them. */
  outputs: ActionOutputs;
  /** The step's log lines (stdout then stderr), with `::add-mask::` and other workflow commands. */
  log: string[];
  exitCode: number | null;
  /** What main saved for the post step. */
  state: Record<string, string>;
}

export interface Sandbox {
  /** The broker's origin, e.g. `http://127.0.0.1:41234`. */
  readonly brokerUrl: string;
  /** The simulator's origin (GitHub API, OIDC issuer and ID-token endpoint live under it). */
  readonly platformUrl: string;
  /** The bearer secret of `/sign` and `/releases` (fake). */
  readonly processTriggerSecret: string;
  /** The webhook HMAC secret of `/webhook` (fake). */
  readonly webhookSecret: string;
  /** The variables a job's steps see: `ACTIONS_ID_TOKEN_REQUEST_URL`, `…_TOKEN`, `GITHUB_*`. */
  readonly runnerEnv: Readonly<Record<string, string>>;
  /** The App's installation id on the world's organisation. */
  readonly installationId: number;
  readonly world: World;
  /** A signed OIDC token for one job, as the runner would hand it to the job (valid 5 minutes). */
  mintJobToken(claims?: JobClaims): Promise<string>;
  /**
   * Runs the bundled action (`dist/main`) as the runner runs it, for a job with `claims`, against
   * this broker; then its post step (revocation) when `post` is true. `env` is merged over the
   * job's variables for both steps (a variable set to `undefined` is left out): the action's test
   * settings (`TOKENSMITH_RETRY_BASE_MS: "0"`, docs/action.md#other-failures), or a job without
   * `id-token: write` (`ACTIONS_ID_TOKEN_REQUEST_URL: undefined`).
   */
  runAction(options?: { inputs?: Record<string, string>; job?: JobClaims; post?: boolean; env?: Record<string, string | undefined> }): Promise<ActionRun>;
  /**
   * Sets (or, with `null`, deletes) a trust policy on the default branch: `repository`'s
   * `.github/tokensmith.yml`, or with `owner: true` the owner policy `.github/tokensmith-org.yml` in
   * the `.github` repository of the owner named by `repository` (added to the installation). The
   * broker's cached read is dropped as a push touching the file would drop it (docs/policies.md).
   */
  setPolicy(repository: string, yaml: string | null, options?: { owner?: boolean }): Promise<void>;
  /** What the platform was asked to do, read from the simulator's request log. */
  readonly platform: PlatformView;
  /** The simulator itself, for tests that need a knob this interface does not have. */
  readonly simulator: Simulator;
  /** The emulated link in front of the platform (`link` option): its settings and byte counts. */
  readonly link: Link | undefined;
  /**
   * The broker's log lines (JSON, one object a line, at the `LOG_LEVEL` of `env`, default `info`;
   * the last {@link LOG_LINES_KEPT}), as it would write them to stdout. It never logs a token, key
   * or OIDC JWT.
   */
  readonly logs: readonly string[];
  /** Stops the broker and the simulator. */
  close(): Promise<void>;
  /** `close()`, for `await using sandbox = await startSandbox()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** How many of the broker's last log lines `sandbox.logs` keeps (a sandbox may run for days). */
export const LOG_LINES_KEPT = 10_000;

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** The broker's only way out: a fetch that refuses anything but loopback. */
const loopbackOnlyFetch: typeof fetch = (input, init) => {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  if (!LOOPBACK.has(url.hostname)) return Promise.reject(new Error(`sandbox: refused a non-loopback address: ${url.hostname}`));
  return fetch(input, init);
};

/**
 * Starts the simulator, seeds the world, and starts a broker pointed at it on 127.0.0.1. Any
 * failure on the way (a world the simulator cannot seed, a busy port) rejects with one line naming
 * the cause, after closing whatever was already started: a test that catches it can still exit.
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const world = parseWorld(options.world ?? DEFAULT_WORLD);
  if (options.link) checkLink(options.link);
  // As the broker's own start refuses it (docs/settings.md): before anything is opened.
  if (parseLogLevel(options.env?.LOG_LEVEL) === null) throw new RangeError(`env.LOG_LEVEL is not one of ${LOG_LEVELS.join(", ")}: ${JSON.stringify(options.env?.LOG_LEVEL)}`);
  // What is open so far, closed newest first if a later step fails.
  const opened: Array<() => Promise<void>> = [];
  try {
    return await started(options, world, opened);
  } catch (error) {
    for (const close of opened.reverse()) await close().catch(() => undefined);
    throw error;
  }
}

async function started(options: SandboxOptions, world: World, opened: Array<() => Promise<void>>): Promise<Sandbox> {
  const sim = await createSimulator({ ...(options.link ? { link: { ...options.link } } : {}), tokenFormat: options.tokenFormat, subjectFormat: options.subjectFormat });
  opened.push(() => sim.close());
  let seeded: ReturnType<typeof seedWorld>;
  try {
    seeded = seedWorld(sim, world);
  } catch (error) {
    throw new Error(`world: could not seed it: ${messageOf(error).replace(/^simulator: /, "")}`);
  }
  const { app: ghApp, installationId } = seeded;
  const processTriggerSecret = `fake-trigger-${randomBytes(12).toString("hex")}`;
  const webhookSecret = `fake-webhook-${randomBytes(12).toString("hex")}`;
  const env: Record<string, string> = {
    HOST_APP_ID: String(ghApp.id),
    HOST_APP_PRIVATE_KEY: ghApp.privateKeyPem,
    HOST_API_BASE: sim.apiBase,
    HOST_OIDC_ISSUER: sim.oidc.issuer,
    PROCESS_TRIGGER_SECRET: processTriggerSecret,
    HOST_WEBHOOK_SECRET: webhookSecret,
    AUTO_UPDATE_BRANCHES: "true",
    UPDATE_BRANCH_PER_MINUTE: "1000",
    UPDATE_BRANCH_PER_HOUR: "1000000",
    // Every job of a sandbox sends from 127.0.0.1, where real runners each have an address of their
    // own: no per-sender rate unless the test sets one (docs/operations.md#senders).
    SENDER_REQUESTS_PER_SECOND: "0",
    ...options.env,
  };
  // The broker's log stays in memory (`sandbox.logs`): the sandbox's own lines are what a user reads.
  const logs: string[] = [];
  let partial = "";
  const sink = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      logs.push(...lines.filter(Boolean));
      if (logs.length > LOG_LINES_KEPT) logs.splice(0, logs.length - LOG_LINES_KEPT);
      done();
    },
  });
  const app = createApp({ env: () => env, fetch: loopbackOnlyFetch, logger: createLogger({ level: parseLogLevel(env.LOG_LEVEL) ?? "info", destination: sink }) });
  opened.push(() => app.close());
  const server = await listenBroker(app, options.port ?? 0);
  const brokerUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const firstRepository = `${world.organisation}/${world.repositories[0]!.name}`;

  const claimsFor = (job: JobClaims = {}): Partial<Claims> & Record<string, unknown> => {
    checkJobClaims(job);
    const { repository = firstRepository, ref = "refs/heads/main", workflow = "release", audience = "tokensmith", custom = {}, ...rest } = job;
    const owner = repository.split("/")[0]!;
    return {
      repository,
      repository_owner: owner,
      ref,
      workflow,
      workflow_ref: `${repository}/.github/workflows/${workflow}.yml@${ref}`,
      aud: audience,
      ...rest,
      ...custom,
    };
  };
  const jobEnv = (job: JobClaims = {}): Record<string, string> => {
    const claims = claimsFor(job);
    return {
      GITHUB_REPOSITORY: String(claims.repository),
      GITHUB_REF: String(claims.ref),
      GITHUB_RUN_ID: "4242",
      GITHUB_SHA: DEFAULT_SHA,
      GITHUB_API_URL: sim.apiBase,
      ACTIONS_ID_TOKEN_REQUEST_URL: sim.actions.requestUrl,
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: sim.actions.requestToken,
    };
  };
  // What the runner's ID-token endpoint signs when no job asked otherwise: the world's first repository.
  const { aud: _aud, ...defaultRunnerClaims } = claimsFor();
  sim.actions.claims = defaultRunnerClaims;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
      await sim.close();
    })();
    return closed;
  };
  return {
    brokerUrl,
    platformUrl: sim.url,
    processTriggerSecret,
    webhookSecret,
    runnerEnv: jobEnv(),
    installationId,
    world,
    mintJobToken: async (claims) => sim.oidc.sign(claimsFor(claims)),
    async runAction({ inputs = {}, job, post = false, env: extra = {} } = {}) {
      const { aud: _audience, ...claims } = claimsFor(job);
      // The job's claims for this run; then what a test had set (docs/sandbox.md#the-runners-id-token-endpoint).
      const before = sim.actions.claims;
      sim.actions.claims = claims;
      try {
        const stepEnv = { ...jobEnv(job), ...extra };
        const main = await runBundledStep("main", { inputs: { "auth-mode": "public-app", "broker-url": brokerUrl, ...inputs }, env: stepEnv });
        if (!post || main.exitCode !== 0) return main;
        const after = await runBundledStep("post", { inputs: { "auth-mode": "public-app", "broker-url": brokerUrl, ...inputs }, env: stepEnv, state: main.state });
        return { ...main, log: [...main.log, ...after.log], exitCode: after.exitCode };
      } finally {
        sim.actions.claims = before;
      }
    },
    async setPolicy(repository, yaml, { owner = false } = {}) {
      const org = repository.split("/")[0]!;
      const name = owner ? ".github" : repository.split("/")[1] ?? "";
      const full = `${org}/${name}`;
      const path = owner ? ".github/tokensmith-org.yml" : ".github/tokensmith.yml";
      if (owner) {
        const installation = sim.installation(installationId);
        if (Array.isArray(installation.repositories) && !installation.repositories.includes(".github")) {
          installation.repositories = [...installation.repositories, ".github"];
          // What GitHub sends when a repository is added to the installation.
          dropReadersOnInstallationChange(app.broker, "installation_repositories", { action: "added", installation: { id: installationId } });
        }
      }
      if (!sim.git.head(full, "main")) sim.git.createBranch(full, "main");
      sim.git.setFile(full, path, yaml);
      const repo = sim.repository(org, name);
      // The delivery GitHub would send for that commit, handed to the broker's own push handling.
      await dropPoliciesOnPush(app.broker, {
        ref: "refs/heads/main",
        repository: { id: repo.id, name, full_name: full, default_branch: "main", owner: { login: org, id: repo.ownerId } },
        commits: [{ added: [], modified: [path], removed: [] }],
      });
    },
    platform: createPlatformView(sim),
    simulator: sim,
    link: sim.link,
    logs,
    [Symbol.asyncDispose]: close,
    close,
  };
}

/**
 * serve() treats an error at listen (EADDRINUSE, EACCES) as fatal and throws it from its `error`
 * listener, where no caller can catch it. Until the broker listens, its listeners are held back
 * and a listen error rejects with the cause instead; once listening, they are put back (they
 * handle accept errors, out of file descriptors, for the server's life).
 */
function listenBroker(app: ReturnType<typeof createApp>, port: number): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const server = serve(app, port, "127.0.0.1", () => {
      server.removeListener("error", refuse);
      for (const listener of held) server.on("error", listener as (error: Error) => void);
      resolve(server);
    });
    const held = server.listeners("error");
    server.removeAllListeners("error");
    const refuse = (error: NodeJS.ErrnoException) => {
      const why = error.code === "EADDRINUSE" ? "the port is in use" : error.code === "EACCES" ? "permission denied" : error.message;
      reject(new Error(`broker: cannot listen on 127.0.0.1:${port}: ${why} (${error.code ?? "error"})`, { cause: error }));
    };
    server.once("error", refuse);
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A link's settings must be finite and not negative (`mbit` 0: no bandwidth limit). */
export function checkLink(link: LinkOptions): void {
  for (const [name, value] of [["rttMs", link.rttMs], ["mbit", link.mbit], ["setupRoundTrips", link.setupRoundTrips ?? 0]] as const) {
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new RangeError(`link.${name} must be a number ≥ 0, got ${String(value)}`);
  }
}

/** `40ms/100mbit` (or `40/100`) → `{ rttMs: 40, mbit: 100 }`; undefined when it does not read so. */
export function parseLink(text: string): LinkOptions | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(?:ms)?\s*\/\s*(\d+(?:\.\d+)?)\s*(?:mbit(?:\/s)?)?\s*$/i.exec(text);
  if (!match) return undefined;
  return { rttMs: Number(match[1]), mbit: Number(match[2]) };
}
