import { BrokerError } from "../../shared/broker-error.js";
import type { FileAddition, FileDeletion } from "../../shared/types.js";
import { isObject, own } from "../http/fields.js";
import { isBase64 } from "./is-base64.js";

/** A /sign body that passed every check of docs/api.md#post-sign, ready for createCommitOnBranch. */
export interface SignCommand {
  owner: string;
  name: string;
  /** owner/name */
  repository: string;
  branch: string;
  expectedHeadOid: string;
  message: { headline: string; body?: string };
  additions: FileAddition[];
  deletions: FileDeletion[];
}

// A repository name as GitHub allows it; "." and ".." are not names.
const NAME = /^[A-Za-z0-9_.-]+$/;
// A commit SHA: SHA-1 (40 hex) or SHA-256 (64 hex) repositories.
const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/i;

/**
 * Body of POST /sign (docs/api.md#post-sign), checked in this order: required fields present
 * (missing_required_fields) → their types and forms (invalid_request) → `repo` is owner/name
 * (invalid_repo) → `branch` a valid branch name (invalid_request) → additions/deletions well
 * formed, every path one a commit may carry, no path twice (invalid_request) → at least one change
 * (no_file_changes). `user` is accepted and ignored: commits are always App-attributed.
 */
export function readSignRequest(body: Record<string, unknown>): SignCommand {
  const message = own(body, "message");
  const required: Array<[string, unknown]> = [
    ["repo", own(body, "repo")],
    ["branch", own(body, "branch")],
    ["expected_head_oid", own(body, "expected_head_oid")],
    ["message.headline", isObject(message) ? own(message, "headline") : message],
  ];
  for (const [field, value] of required) {
    if (absent(value)) throw new BrokerError("missing_required_fields", { detail: field });
  }
  if (!isObject(message)) throw new BrokerError("invalid_request", { detail: "message is not an object" });
  for (const [field, value] of required) {
    if (typeof value !== "string") throw new BrokerError("invalid_request", { detail: `${field} is not a string` });
  }
  const messageBody = own(message, "body");
  if (!absent(messageBody) && typeof messageBody !== "string") throw new BrokerError("invalid_request", { detail: "message.body is not a string" });
  const expectedHeadOid = own(body, "expected_head_oid") as string;
  if (!OID.test(expectedHeadOid)) throw new BrokerError("invalid_request", { detail: "expected_head_oid is not a commit SHA" });

  const repository = (own(body, "repo") as string).trim();
  const [owner, name, ...rest] = repository.split("/");
  if (rest.length > 0 || !validName(owner) || !validName(name)) throw new BrokerError("invalid_repo");

  const branch = own(body, "branch") as string;
  const branchProblem = branchNameProblem(branch);
  if (branchProblem) throw new BrokerError("invalid_request", { detail: `branch ${branchProblem}` });

  const additions = readList("additions", own(body, "additions"), (item, at) => ({ path: readPath(item, at), contents: readContents(item, at) }));
  const deletions = readList("deletions", own(body, "deletions"), (item, at) => ({ path: readPath(item, at) }));
  const seen = new Set<string>();
  for (const { path } of [...additions, ...deletions]) {
    if (seen.has(path)) throw new BrokerError("invalid_request", { detail: "the same path appears twice" });
    seen.add(path);
  }
  if (additions.length === 0 && deletions.length === 0) throw new BrokerError("no_file_changes");

  return {
    owner: owner!,
    name: name!,
    repository,
    branch,
    expectedHeadOid,
    message: typeof messageBody === "string" ? { headline: own(message, "headline") as string, body: messageBody } : { headline: own(message, "headline") as string },
    additions,
    deletions,
  };
}

function readList<T>(field: string, value: unknown, read: (item: Record<string, unknown>, at: string) => T): T[] {
  if (absent(value)) return [];
  if (!Array.isArray(value)) throw new BrokerError("invalid_request", { detail: `${field} is not an array` });
  return value.map((item, index) => {
    const at = `${field}[${index}]`;
    if (!isObject(item)) throw new BrokerError("invalid_request", { detail: `${at} is not an object` });
    return read(item, at);
  });
}

function readPath(item: Record<string, unknown>, at: string): string {
  const path = own(item, "path");
  if (typeof path !== "string" || path === "") throw new BrokerError("invalid_request", { detail: `${at}.path is not a non-empty string` });
  const problem = commitPathProblem(path);
  if (problem) throw new BrokerError("invalid_request", { detail: `${at}.path ${problem}` });
  return path;
}

// Control characters (NUL included) and DEL.
const CONTROL = /[\u0000-\u001f\u007f]/;
// A UTF-16 half without its other half: not text, and no file system agrees on its bytes.
const LONE_SURROGATE = /\p{Cs}/u;
// Code points HFS+ ignores in names (git's is_hfs_dotgit): ".g\u200cit" is ".git" there.
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/gu;

/**
 * Why no commit should carry this file path, or null. A path is relative, `/`-separated and
 * plain: not absolute (`/a`, `C:…`), no backslash (a separator on Windows), no control character
 * or NUL, no lone surrogate, no empty segment (`a//b`, `a/`), no `.` or `..` segment, and no
 * segment that is `.git` on some file system: in any case (`.GIT`), with trailing dots or spaces
 * (NTFS drops them), with characters HFS+ ignores, or as its NTFS short name `git~1`.
 */
export function commitPathProblem(path: string): string | null {
  if (CONTROL.test(path)) return "contains a control character";
  if (LONE_SURROGATE.test(path)) return "is not well-formed text";
  if (path.includes("\\")) return "contains a backslash";
  if (path.startsWith("/") || /^[A-Za-z]:/.test(path)) return "is absolute";
  for (const segment of path.split("/")) {
    if (segment === "") return "has an empty segment";
    if (segment === "." || segment === "..") return "has a . or .. segment";
    if (isDotGit(segment)) return "has a .git segment";
  }
  return null;
}

function isDotGit(segment: string): boolean {
  const name = segment.replace(HFS_IGNORED, "").replace(/[. ]+$/, "").toLowerCase();
  return name === ".git" || name === "git~1";
}

/**
 * Why `git check-ref-format --branch` would refuse this branch name, or null (git's rules for
 * `refs/heads/<name>`, plus --branch's own: not starting with `-`, not `HEAD`). No control
 * character, space, `~ ^ : ? * [ \`; no `..` or `@{`; not starting or ending with `/`, no `//`;
 * not ending with `.`; no segment starting with `.` or ending with `.lock`.
 */
export function branchNameProblem(name: string): string | null {
  if (name === "") return "is empty";
  if (name.startsWith("-")) return "starts with -";
  if (name === "HEAD") return "is HEAD";
  if (/[\u0000-\u0020\u007f~^:?*[\\]/.test(name)) return "contains a character git refuses";
  if (LONE_SURROGATE.test(name)) return "is not well-formed text";
  if (name.includes("..")) return "contains ..";
  if (name.includes("@{")) return "contains @{";
  if (name.startsWith("/") || name.endsWith("/") || name.includes("//")) return "has an empty segment";
  if (name.endsWith(".")) return "ends with .";
  for (const segment of name.split("/")) {
    if (segment.startsWith(".")) return "has a segment starting with .";
    if (segment.endsWith(".lock")) return "has a segment ending with .lock";
  }
  return null;
}

function readContents(item: Record<string, unknown>, at: string): string {
  const contents = own(item, "contents");
  if (typeof contents !== "string" || !isBase64(contents)) throw new BrokerError("invalid_request", { detail: `${at}.contents is not base64` });
  return contents;
}

function validName(part: string | undefined): boolean {
  return part !== undefined && NAME.test(part) && part !== "." && part !== "..";
}

function absent(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}
