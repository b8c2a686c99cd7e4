// Public surface of the platform simulator (fake GitHub / GHES + OIDC issuer over loopback HTTP).
// Free of jest APIs so benchmarks can import the compiled build directly.
export { createSimulator, type SimulatorOptions } from "./create-simulator.js";
export { linkHeader, paginate, type Page } from "./pagination.js";
export { DOCS_ROOT, SimulatorHttpError, githubError, notImplemented } from "./router.js";
export { GARBAGE_BODY } from "./http-server.js";
export { DEFAULT_SHA, defaultClaims } from "./oidc-issuer.js";
export { stableId, isoSeconds } from "./github-state.js";
export type * from "./types.js";
export { GraphqlTypedError, nodeId, tokenCoversRepository, tokenPermission, type GraphqlContext, type GraphqlRegistry } from "./graphql-endpoint.js";
export { MERGE_CONFLICT, type CommitState, type GitApi, type PullRequestState, type UpdateBranchCall } from "./git-state.js";
export type { ReleaseInput, ReleaseState, ReleasesApi } from "./releases-state.js";
export { linkFloorMs, startLink, type Link, type LinkOptions, type LinkStats } from "./link.js";
