// Can the broker read this installation's owner policy (docs/policies.md#threats-and-what-answers-them: the
// owner policy is read only from the `.github` repository of the same owner and installation, and
// `doctor` says when the App cannot read it)? An installation on selected repositories that leaves
// out `.github`, or one without `contents`, reads as "no owner policy" at /token, silently: the
// owner's central rules would not apply. Asked as the broker asks: a contents-read installation
// token (narrowed here to `.github`), then the file. The token is revoked at once.
// https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app
// https://docs.github.com/rest/repos/contents#get-repository-content
import { RequestError } from "@octokit/request-error";
import type { PlatformClient } from "../../github/platform-client.js";
import { statusOf } from "../../github/platform-request.js";
import { POLICY_FILES } from "../../policy/policy-types.js";
import { ok, warn, whyFailed, type CheckResult } from "./check-result.js";

export interface PolicyInstallation {
  id: number;
  account?: { login?: string } | null;
  permissions?: Record<string, string>;
  repository_selection?: string;
}

const statusIs = (error: unknown, status: number) => error instanceof RequestError && statusOf(error) === status;

export async function checkOwnerPolicy(input: { client: PlatformClient; jwt: string; installation: PolicyInstallation; required: boolean }): Promise<CheckResult> {
  const { client, installation } = input;
  const owner = installation.account?.login ?? "?";
  const name = `installation ${installation.id} (${owner})`;
  const where = `${owner}/.github/${POLICY_FILES.owner}`;
  if (!installation.permissions?.contents) {
    return warn(
      `${name}: no contents permission, so the broker can read no policy here (neither ${where} nor any repository's ${POLICY_FILES.repository})` +
        (input.required ? ": TOKEN_POLICY=required denies every token" : ": every repository gets the default token") +
        `; grant the App contents: read`,
    );
  }
  let token: string;
  try {
    const minted = await client({
      method: "POST",
      path: `/app/installations/${installation.id}/access_tokens`,
      bearer: input.jwt,
      body: { repositories: [".github"], permissions: { contents: "read" } },
    });
    token = String((minted.data as { token?: unknown }).token);
  } catch (error) {
    // 422: `.github` is not among the installation's repositories, or does not exist.
    if (statusIs(error, 422)) {
      return installation.repository_selection === "all"
        ? ok(`${name}: ${owner} has no .github repository, so no owner policy (one created there is read: the installation covers all repositories)`)
        : warn(
            `${name}: the App cannot read ${owner}/.github (not among the installation's selected repositories): an owner policy ${where} there is ignored; ` +
              `add the .github repository to the App's installation on ${owner} (Repository access), or ignore this if ${owner} has none`,
          );
    }
    return warn(`${name}: could not check whether the owner policy ${where} is readable (reader token: ${whyFailed(error)})`);
  }
  try {
    const answer = await client({ method: "GET", path: `/repos/${encodeURIComponent(owner)}/.github/contents/${POLICY_FILES.owner.split("/").map(encodeURIComponent).join("/")}`, bearer: token });
    const sha = (answer.data as { sha?: unknown } | undefined)?.sha;
    return ok(`${name}: owner policy ${where} readable${typeof sha === "string" ? ` (blob ${sha.slice(0, 12)})` : ""}`);
  } catch (error) {
    if (statusIs(error, 404)) return ok(`${name}: ${owner}/.github readable; no owner policy in it (${POLICY_FILES.owner} absent)`);
    return warn(`${name}: could not read the owner policy ${where} (${whyFailed(error)}): /token would answer 503 policy_unavailable`);
  } finally {
    await client({ method: "DELETE", path: "/installation/token", bearer: token }).catch(() => undefined);
  }
}
