import { BrokerError } from "../../shared/broker-error.js";
import { isObject, own } from "../http/fields.js";

/** A push the broker acts on: a branch that still exists, in a repository of one installation. */
export interface BranchPush {
  owner: string;
  name: string;
  /** owner/name */
  repository: string;
  branch: string;
  installationId: number;
}

/** Pushes the broker does not act on, each with its own word (docs/design.md#decisions-where-the-contract-was-open). */
type SkippedPush = "tag_push" | "branch_deleted" | "not_a_branch";

/**
 * The fields of a `push` delivery the broker needs. A tag (created or deleted), a deleted branch
 * and any other ref (`refs/notes/…`) are skipped;
 * a payload without what every App push delivery carries is 400 invalid_request.
 * https://docs.github.com/webhooks/webhook-events-and-payloads#push
 */
export function readPush(payload: Record<string, unknown>): BranchPush | { skipped: SkippedPush } {
  const ref = own(payload, "ref");
  if (typeof ref !== "string" || ref === "") throw new BrokerError("invalid_request", { detail: "push without ref" });
  // A tag, created or deleted, is a tag push; only a deleted branch is a branch deletion.
  if (ref.startsWith("refs/tags/")) return { skipped: "tag_push" };
  if (own(payload, "deleted") === true) return { skipped: "branch_deleted" };
  if (!ref.startsWith("refs/heads/") || ref === "refs/heads/") return { skipped: "not_a_branch" };

  const repository = own(payload, "repository");
  const fullName = isObject(repository) ? own(repository, "full_name") : undefined;
  if (typeof fullName !== "string" || !/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(fullName)) {
    throw new BrokerError("invalid_request", { detail: "push without repository.full_name" });
  }
  const installation = own(payload, "installation");
  const installationId = isObject(installation) ? own(installation, "id") : undefined;
  if (typeof installationId !== "number" || !Number.isSafeInteger(installationId) || installationId <= 0) {
    throw new BrokerError("invalid_request", { detail: "push without installation.id" });
  }
  const [owner, name] = fullName.split("/") as [string, string];
  return { owner, name, repository: fullName, branch: ref.slice("refs/heads/".length), installationId };
}
