// The variables a GitHub Actions runner gives a job's steps, pointed at the simulator: what both
// the in-process action tests and the bundled-action tests run with.
import { DEFAULT_SHA, type Simulator } from "../../simulator/index.js";

export function runnerJobEnv(sim: Simulator): Record<string, string> {
  return {
    GITHUB_REPOSITORY: "octo-org/app",
    GITHUB_REF: "refs/heads/main",
    GITHUB_RUN_ID: "4242",
    GITHUB_SHA: DEFAULT_SHA,
    GITHUB_API_URL: sim.apiBase,
    ACTIONS_ID_TOKEN_REQUEST_URL: sim.actions.requestUrl,
    ACTIONS_ID_TOKEN_REQUEST_TOKEN: sim.actions.requestToken,
  };
}
