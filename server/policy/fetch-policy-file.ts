// One policy file by conditional GET (`If-None-Match` with the ETag last seen: GitHub answers 304,
// which costs no rate limit, while the file is unchanged).
// https://docs.github.com/rest/repos/contents#get-repository-content
// https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#use-conditional-requests-if-appropriate
import { RequestError } from "@octokit/request-error";
import type { PlatformClient } from "../github/platform-client.js";
import { statusOf } from "../github/platform-request.js";

/** What the platform said about the file. */
export type FileRead =
  | { kind: "unchanged" }
  | { kind: "absent" }
  | { kind: "file"; text: string; sha: string; etag?: string }
  /** The path holds something that is not a readable file (a directory, a file too large to inline). */
  | { kind: "unreadable"; problem: string; sha?: string; etag?: string };

export class PolicyReadFailure extends Error {
  constructor(readonly status: number | undefined, options: { cause: unknown }) {
    super(`policy read failed: status ${status ?? "network"}`, options);
    this.name = "PolicyReadFailure";
  }
}

export async function fetchPolicyFile(input: {
  client: PlatformClient;
  token: string;
  owner: string;
  repo: string;
  path: string;
  /** A branch or commit sha; default: the repository's default branch (the only one /token reads). */
  ref?: string;
  etag?: string;
  deadlineAt?: number;
}): Promise<FileRead> {
  let answer;
  try {
    answer = await input.client({
      method: "GET",
      path: `/repos/${encodeURIComponent(input.owner)}/${encodeURIComponent(input.repo)}/contents/${input.path.split("/").map(encodeURIComponent).join("/")}${input.ref === undefined ? "" : `?ref=${encodeURIComponent(input.ref)}`}`,
      bearer: input.token,
      ...(input.etag === undefined ? {} : { ifNoneMatch: input.etag }),
      deadlineAt: input.deadlineAt,
    });
  } catch (error) {
    // 404: no such file (or the App cannot see the repository): no policy. Anything else: unknown.
    if (error instanceof RequestError && statusOf(error) === 404) return { kind: "absent" };
    throw new PolicyReadFailure(error instanceof RequestError ? statusOf(error) : undefined, { cause: error });
  }
  if (answer.status === 304) return { kind: "unchanged" };
  const etag = answer.headers.etag;
  const data = answer.data as { type?: unknown; encoding?: unknown; content?: unknown; sha?: unknown } | undefined;
  const sha = typeof data?.sha === "string" && /^[0-9a-f]{40,64}$/.test(data.sha) ? data.sha : undefined;
  if (!data || Array.isArray(data) || data.type !== "file") return { kind: "unreadable", problem: "not a file", sha, etag };
  // GitHub inlines files up to 1 MB; a larger one comes with encoding "none" and no content.
  if (data.encoding !== "base64" || typeof data.content !== "string") return { kind: "unreadable", problem: "over 64 KiB", sha, etag };
  if (sha === undefined) throw new PolicyReadFailure(answer.status, { cause: new Error("contents answer without a blob sha") });
  return { kind: "file", text: Buffer.from(data.content, "base64").toString("utf8"), sha, ...(etag ? { etag } : {}) };
}
