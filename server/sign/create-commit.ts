import { GraphqlResponseError, withCustomRequest } from "@octokit/graphql";
import { RequestError } from "@octokit/request-error";
import { BrokerError } from "../../shared/broker-error.js";
import type { OctokitRequest } from "../github/platform-request.js";
import { statusOf } from "../github/platform-request.js";
import type { Logger } from "../log.js";
import type { SignCommand } from "./read-sign-request.js";

// https://docs.github.com/graphql/reference/mutations#createcommitonbranch
export const CREATE_COMMIT_MUTATION = /* GraphQL */ `
  mutation CreateCommitOnBranch($input: CreateCommitOnBranchInput!) {
    createCommitOnBranch(input: $input) {
      commit {
        id
        oid
        abbreviatedOid
        url
        committedDate
        messageHeadline
        messageBody
      }
    }
  }
`;

interface CreateCommitInput {
  /** The platform's REST request (injected fetch, timeout); GraphQL goes through it. */
  request: OctokitRequest;
  graphqlUrl: string;
  token: string;
  command: SignCommand;
  log: Logger;
  requestId?: string;
}

/** The mutation's `input`, exactly as the platform documents it (docs/design.md#platform-facts-we-rely-on). */
function mutationInput(command: SignCommand): Record<string, unknown> {
  const fileChanges: Record<string, unknown> = {};
  if (command.additions.length > 0) fileChanges.additions = command.additions.map(({ path, contents }) => ({ path, contents }));
  if (command.deletions.length > 0) fileChanges.deletions = command.deletions.map(({ path }) => ({ path }));
  return {
    branch: { repositoryNameWithOwner: command.repository, branchName: command.branch },
    expectedHeadOid: command.expectedHeadOid,
    message: command.message,
    fileChanges,
  };
}

/**
 * `createCommitOnBranch` with an installation token; returns the platform's commit object. Never
 * retried: the write is only idempotent through expectedHeadOid, and a caller retrying with the
 * same oid is the safe way (docs/errors.md). Every failure is 502 sign_failed — including GitHub's HTTP 200
 * with `errors: [{type: "STALE_DATA"}]` for a moved branch — and the platform's words go to the log.
 */
export async function createCommit(input: CreateCommitInput): Promise<Record<string, unknown>> {
  const graphql = withCustomRequest(input.request);
  const where = { repository: input.command.repository, branch: input.command.branch, request_id: input.requestId };
  let data: { createCommitOnBranch?: { commit?: Record<string, unknown> | null } | null };
  try {
    // The object form: the string form refuses `url` (it would be taken for a variable).
    data = await graphql<typeof data>({
      query: CREATE_COMMIT_MUTATION,
      url: input.graphqlUrl,
      input: mutationInput(input.command),
      headers: { authorization: `token ${input.token}` },
    });
  } catch (error) {
    if (error instanceof GraphqlResponseError) {
      const errors = (error.errors ?? []).map((e) => ({ type: (e as { type?: string }).type, message: String(e.message).slice(0, 500) }));
      input.log.warn({ ...where, platform_errors: errors }, "platform rejected the commit");
      throw new BrokerError("sign_failed", { detail: errors.map((e) => `${e.type ?? "ERROR"}: ${e.message}`).join("; ") });
    }
    const status = statusOf(error);
    const platformMessage = error instanceof RequestError ? messageOf(error) : undefined;
    input.log.warn({ ...where, status: status ?? "network", platform_message: platformMessage }, "commit request failed");
    throw new BrokerError("sign_failed", { detail: `status ${status ?? "network"}` });
  }
  const commit = data?.createCommitOnBranch?.commit;
  if (!commit || typeof commit !== "object") {
    input.log.warn(where, "platform answered createCommitOnBranch without a commit");
    throw new BrokerError("sign_failed", { detail: "no commit in the answer" });
  }
  return commit;
}

function messageOf(error: RequestError): string | undefined {
  const data = error.response?.data as { message?: unknown } | undefined;
  return typeof data?.message === "string" ? data.message.slice(0, 500) : undefined;
}
