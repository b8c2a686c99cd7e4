// A pull request whose head changes one file (a policy file or not), for the policy check run tests.
import type { Simulator } from "../../simulator/types.js";

/** A new branch `branch` off main in `repository`, with `path` set to `text` on it, and a pull request from it. */
export function pullRequestChanging(sim: Simulator, where: { repository: string; branch: string }, path: string, text: string): { number: number; headSha: string } {
  sim.git.createBranch(where.repository, where.branch, { from: "main" });
  sim.git.setFile(where.repository, path, text, { branch: where.branch });
  const number = sim.git.addPullRequest(where.repository, { base: "main", head: where.branch });
  return { number, headSha: sim.git.pullRequest(where.repository, number).headSha };
}
