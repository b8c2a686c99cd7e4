// Branches, commits and pull requests of the simulated platform (createCommitOnBranch,
// update-branch, pull request listings). Filled in by the /sign + /webhook work.
import type { Simulator } from "./types.js";

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface GitApi {}

export function registerGit(_sim: Simulator): GitApi {
  return {};
}
