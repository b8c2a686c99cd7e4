// A type test of `tokensmith/testing` (issue 41, item 4): never run, only type-checked by `npm test`'s
// `tsc -p tsconfig.json --noEmit` (and the packed project's, examples/packed-project). Each
// `@ts-expect-error` line must fail to compile: if one compiled, tsc would report the directive as
// unused and `npm test` would fail. The names are imported as a user imports them.
import {
  startSandbox,
  type ActionRun,
  type ErrorBody,
  type ErrorCode,
  type FaultSpec,
  type GitHubOidcClaims,
  type IssuedToken,
  type JobClaims,
  type Mint,
  type RecordedRequest,
  type ReleasesResponse,
  type RouteContext,
  type RouteResult,
  type Sandbox,
  type Simulator,
  type TokenResponse,
} from "../server/sandbox/index.js";

export async function typeTest(): Promise<void> {
  const sandbox: Sandbox = await startSandbox();
  const simulator: Simulator = sandbox.simulator;

  // GitHub's claims by GitHub's names; a misspelt one does not compile.
  await sandbox.mintJobToken({ repository: "octo-org/app", ref: "refs/tags/v1.2.0", event_name: "push", ref_type: "tag", environment: "production" });
  // @ts-expect-error -- GitHub's claim is `event_name`
  await sandbox.mintJobToken({ event: "push" });
  // @ts-expect-error -- `ref_type` is "branch" or "tag"
  await sandbox.mintJobToken({ ref_type: "heads" });
  // @ts-expect-error -- GitHub's claims are strings: "true" or "false"
  await sandbox.mintJobToken({ ref_protected: true });
  // @ts-expect-error -- GitHub's claim is `repository_visibility`, one of three values
  await sandbox.runAction({ job: { repository_visibility: "secret" } });
  // @ts-expect-error -- a claim of one's own goes under `custom`
  await sandbox.runAction({ job: { deployment_tier: "gold" } });
  // The explicit escape: any claim, any value.
  await sandbox.runAction({ job: { custom: { deployment_tier: "gold", ref_protected: true } } });
  const job: JobClaims = { workflow: "release", audience: ["tokensmith", "other"], sub: "repo:octo-org/app:environment:production" };
  const claims: Partial<GitHubOidcClaims> = { run_id: "4242", runner_environment: "self-hosted" };
  // @ts-expect-error -- run ids are strings in GitHub's tokens
  const numeric: Partial<GitHubOidcClaims> = { run_id: 4242 };
  void [job, claims, numeric];

  // The broker's answers by name.
  const answer = await fetch(`${sandbox.brokerUrl}/token`, { method: "POST", body: "{}" });
  if (answer.ok) {
    const body = (await answer.json()) as TokenResponse;
    const token: string = body.token;
    const covered: string[] | undefined = body.repositories;
    void [token, covered];
  } else {
    const body = (await answer.json()) as ErrorBody;
    const code: ErrorCode = body.error;
    // @ts-expect-error -- not one of the broker's error codes
    const wrong: ErrorCode = "policy_refused";
    void [code, wrong];
  }
  const releases = (await (await fetch(`${sandbox.brokerUrl}/releases`)).json()) as ReleasesResponse;
  const latestTag: string | undefined = releases.repos[0]?.latest?.tag;
  void latestTag;

  // A fault, a route and the request log by name.
  const fault: FaultSpec = { method: "POST", path: /\/access_tokens$/, times: 1, respond: { status: 403, body: { message: "Forbidden" } } };
  simulator.faults.add(fault);
  // @ts-expect-error -- `respond` is an answer or one of the named misbehaviours
  simulator.faults.add({ path: "/app", respond: "timeout" });
  simulator.route("GET", "/repos/:owner/:repo/environments", (ctx: RouteContext): RouteResult => {
    const { issued } = simulator.requireInstallation(ctx);
    const scoped: IssuedToken["repositories"] = issued.repositories;
    return { status: scoped === "all" || scoped.includes(ctx.params.repo ?? "") ? 200 : 404, body: { total_count: 0, environments: [] } };
  });
  const first: RecordedRequest | undefined = simulator.requests[0];
  const status: number | undefined = first?.response?.status;
  void status;

  // Mint.repositories and IssuedToken.repositories are one form.
  const mint: Mint | undefined = sandbox.platform.mints.at(-1);
  const same: IssuedToken["repositories"] | undefined = mint?.repositories;
  const back: Mint["repositories"] = simulator.tokens.values().next().value!.repositories;
  void [same, back];

  const run: ActionRun = await sandbox.runAction();
  // More variables for the action's steps; undefined leaves one out. Values are strings.
  await sandbox.runAction({ env: { TOKENSMITH_RETRY_BASE_MS: "0", ACTIONS_ID_TOKEN_REQUEST_URL: undefined } });
  // @ts-expect-error a variable's value is a string
  await sandbox.runAction({ env: { TOKENSMITH_RETRY_BASE_MS: 0 } });
  const installationId: string | undefined = run.outputs["installation-id"];
  void installationId;
  await sandbox.close();
}
