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
export type { Link, LinkOptions, LinkStats } from "../../simulator/index.js";
// For a route the simulator does not have (docs/sandbox.md#what-the-platform-answers).
export { githubError } from "../../simulator/index.js";
export type { RouteContext, RouteHandler, RouteResult } from "../../simulator/index.js";
export type { ActionRun, JobClaims, Sandbox, SandboxOptions } from "./start-sandbox.js";
export { DEFAULT_WORLD, parseWorld } from "./world.js";
export type { World, WorldRepository } from "./world.js";
export type { BranchUpdate, Mint, MintPurpose, PlatformView, Release, Revocation, SignedCommit } from "./platform-view.js";
export { isPolicyReaderMint, mintPurpose } from "./platform-view.js";
