// The tag-release job under test, as its workflow runs it: the tokensmith step gets the job's
// token, a later step creates the release with it through GitHub's REST API
// (`POST /repos/{owner}/{repo}/releases`), and the dashboard reads it back from the broker's
// `GET /releases`. Written from README.md and docs/sandbox.md only; the test files run it.
import type { ActionRun, ReleasesResponse, Sandbox } from "tokensmith/testing";

export interface GitHubRelease {
  id: number;
  tag_name: string;
  name: string | null;
  draft: boolean;
  prerelease: boolean;
  author: { login: string; type: string };
}

export interface TagReleaseResult {
  run: ActionRun;
  created: { status: number; release: GitHubRelease };
  listed: { status: number; body: ReleasesResponse };
}

/** Runs the job of a push of `tag` to `repository` (`owner/name`) against the sandbox. */
export async function tagRelease(sandbox: Sandbox, repository: string, tag: string): Promise<TagReleaseResult> {
  const run = await sandbox.runAction({ job: { repository, ref: `refs/tags/${tag}`, event_name: "push", workflow: "release" } });
  if (run.exitCode !== 0 || run.outputs.token === undefined) throw new Error(`the tokensmith step failed:\n${run.log.join("\n")}`);

  const answer = await fetch(`${sandbox.runnerEnv.GITHUB_API_URL}/repos/${repository}/releases`, {
    method: "POST",
    headers: { authorization: `Bearer ${run.outputs.token}`, accept: "application/vnd.github+json", "content-type": "application/json" },
    body: JSON.stringify({ tag_name: tag, name: tag, generate_release_notes: true }),
  });
  const release = (await answer.json()) as GitHubRelease;

  const releases = await fetch(`${sandbox.brokerUrl}/releases`, { headers: { authorization: `Bearer ${sandbox.processTriggerSecret}` } });
  const body = (await releases.json()) as ReleasesResponse;
  return { run, created: { status: answer.status, release }, listed: { status: releases.status, body } };
}
