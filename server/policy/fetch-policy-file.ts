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
  /** 404. `listing`: the directory listing that shows it absent, and its ETag (a 404 has none). */
  | { kind: "absent"; listing?: DirectoryEtag }
  | { kind: "file"; text: string; sha: string; etag?: string }
  /** The path holds something that is not a readable file (a directory, a file too large to inline). */
  | { kind: "unreadable"; problem: string; sha?: string; etag?: string };

export class PolicyReadFailure extends Error {
  constructor(readonly status: number | undefined, options: { cause: unknown }) {
    super(`policy read failed: status ${status ?? "network"}`, options);
    this.name = "PolicyReadFailure";
  }
}

interface ReadInput {
  client: PlatformClient;
  token: string;
  owner: string;
  repo: string;
  path: string;
  /** A branch or commit sha; default: the repository's default branch (the only one /token reads). */
  ref?: string;
  etag?: string;
  deadlineAt?: number;
}

/** The contents API path of `path` ("" = the repository's root, `/contents` with no trailing slash). */
const contentsPath = (input: { owner: string; repo: string; ref?: string }, path: string) =>
  `/repos/${encodeURIComponent(input.owner)}/${encodeURIComponent(input.repo)}/contents${path === "" ? "" : `/${path.split("/").map(encodeURIComponent).join("/")}`}${input.ref === undefined ? "" : `?ref=${encodeURIComponent(input.ref)}`}`;

/**
 * The policy file as /token reads it: like `fetchPolicyFile`, but "no file" is made as cheap to
 * re-check as a file. GitHub answers a missing file 404 with no ETag, and a 404 counts against the
 * installation's rate limit (only a 304 is exempt). A directory listing does carry an ETag: after
 * a 404 the broker lists the file's directory (`.github`), or the repository's root when there is
 * no such directory, once; while "no file" is known, the re-check is that listing, conditionally:
 * 304 (free) while nothing in it changed, a new listing still without the file (one request), or
 * one that names it → the file is read.
 */
export async function readPolicyFile(input: ReadInput & { known?: { absent?: true; listing?: DirectoryEtag } }): Promise<FileRead> {
  const known = input.known?.absent ? input.known.listing : undefined;
  if (known) {
    const listing = await listDirectory(input, known.path, known.etag);
    if (listing.kind === "unchanged") return { kind: "unchanged" };
    if (listing.kind === "listed" && listing.etag && !listing.names.has(nextSegment(input.path, known.path))) return { kind: "absent", listing: { path: known.path, etag: listing.etag } };
    // Changed so that it may hold the file now: read it, as the first time.
  }
  const read = await fetchPolicyFile(input);
  if (read.kind !== "absent") return read;
  const dir = input.path.includes("/") ? input.path.slice(0, input.path.lastIndexOf("/")) : "";
  for (const path of dir === "" ? [""] : [dir, ""]) {
    let listing: Listing;
    try {
      listing = await listDirectory(input, path, undefined);
    } catch {
      return read; // the file's 404 stands; without a listing's ETag the next expiry reads the file again
    }
    if (listing.kind === "absent") continue; // no such directory: its parent shows that
    // Named after all (pushed between the two reads): no ETag kept, the next expiry reads the file.
    if (listing.kind === "listed" && listing.etag && !listing.names.has(nextSegment(input.path, path))) return { kind: "absent", listing: { path, etag: listing.etag } };
    return read;
  }
  return read;
}

/** The directory whose listing showed a file absent, and that listing's ETag. */
export interface DirectoryEtag {
  path: string;
  etag: string;
}

/** The segment of `path` right under the directory `dir` ("" = the root). */
const nextSegment = (path: string, dir: string) => (dir === "" ? path : path.slice(dir.length + 1)).split("/")[0]!;

type Listing = { kind: "unchanged" } | { kind: "absent" } | { kind: "listed"; names: Set<string>; etag?: string };

async function listDirectory(input: ReadInput, dir: string, etag: string | undefined): Promise<Listing> {
  let answer;
  try {
    answer = await input.client({ method: "GET", path: contentsPath(input, dir), bearer: input.token, ...(etag === undefined ? {} : { ifNoneMatch: etag }), deadlineAt: input.deadlineAt });
  } catch (error) {
    if (error instanceof RequestError && statusOf(error) === 404) return { kind: "absent" };
    throw new PolicyReadFailure(error instanceof RequestError ? statusOf(error) : undefined, { cause: error });
  }
  if (answer.status === 304) return { kind: "unchanged" };
  // A directory lists its entries; anything else at that path (a file) holds no file under it.
  const entries = Array.isArray(answer.data) ? (answer.data as Array<{ name?: unknown }>) : [];
  return { kind: "listed", names: new Set(entries.map((entry) => entry.name).filter((n): n is string => typeof n === "string")), ...(answer.headers.etag ? { etag: answer.headers.etag } : {}) };
}

export async function fetchPolicyFile(input: ReadInput): Promise<FileRead> {
  let answer;
  try {
    answer = await input.client({
      method: "GET",
      path: contentsPath(input, input.path),
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
