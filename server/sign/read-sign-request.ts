import { BrokerError } from "../../shared/broker-error.js";
import type { FileAddition, FileDeletion } from "../../shared/types.js";
import { isObject, own } from "../http/fields.js";

/** A /sign body that passed every check of spec 4.2, ready for createCommitOnBranch. */
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
// Standard base64 with padding, as GraphQL's Base64String takes it.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Body of POST /sign (spec 2.3), checked in this order: required fields present
 * (missing_required_fields) → their types and forms (invalid_request) → `repo` is owner/name
 * (invalid_repo) → additions/deletions well formed, no path twice (invalid_request) → at least one
 * change (no_file_changes). `user` is accepted and ignored: commits are always App-attributed.
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
    branch: own(body, "branch") as string,
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
  return path;
}

function readContents(item: Record<string, unknown>, at: string): string {
  const contents = own(item, "contents");
  if (typeof contents !== "string" || !BASE64.test(contents)) throw new BrokerError("invalid_request", { detail: `${at}.contents is not base64` });
  return contents;
}

function validName(part: string | undefined): boolean {
  return part !== undefined && NAME.test(part) && part !== "." && part !== "..";
}

function absent(value: unknown): boolean {
  return value === undefined || value === null || value === "";
}
