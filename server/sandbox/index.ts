/**
 * `tokensmith/testing`: a whole CI platform on loopback — OIDC issuer, GitHub REST and GraphQL,
 * the runner's ID-token endpoint — and a broker pointed at it, for integration tests of a release
 * workflow (jest, vitest, `node:test`). Every token it hands out is fake.
 *
 * @example
 * ```ts
 * import { startSandbox } from "tokensmith/testing";
 * const sandbox = await startSandbox();
 * const { outputs, exitCode } = await sandbox.runAction();
 * await sandbox.close();
 * ```
 * @packageDocumentation
 */
export { FAKE_NOTICE, parseLink, startSandbox } from "./start-sandbox.js";
export type { ActionOutputs, ActionRun, GitHubOidcClaims, JobClaims, Sandbox, SandboxOptions } from "./start-sandbox.js";
export { DEFAULT_WORLD, parseWorld } from "./world.js";
export type { World, WorldRepository } from "./world.js";
export type { BranchUpdate, Mint, MintPurpose, PlatformView, Release, Revocation, SignedCommit } from "./platform-view.js";
export { isPolicyReaderMint, mintPurpose } from "./platform-view.js";
// The broker's answers, as the tests read them (docs/api.md): /token's, /sign's and /releases' bodies and the error body.
export type {
  ErrorBody, ErrorCode, LatestRelease, OidcReason, ReleasesResponse, RepoReleases, SignRequest, SignResponse, TokenRequest, TokenResponse,
} from "../../shared/index.js";
// The simulator behind `sandbox.simulator` (docs/sandbox.md#faults, docs/sandbox.md#what-the-platform-answers).
export type {
  FaultHandle, FaultRegistry, FaultResponse, FaultSpec, HeldAnswer, InstallationState, IssuedToken, KeyEndpointMode, RecordedRequest,
  RequestAuth, Simulator,
} from "../../simulator/index.js";
export type { Link, LinkOptions, LinkStats } from "../../simulator/index.js";
// For a route the simulator does not have (docs/sandbox.md#what-the-platform-answers).
export { githubError } from "../../simulator/index.js";
export type { RouteContext, RouteHandler, RouteResult } from "../../simulator/index.js";
