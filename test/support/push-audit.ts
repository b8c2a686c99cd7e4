import { randomBytes, randomUUID } from "node:crypto";
import { signatureFor } from "../../server/webhook/verify-signature.js";

// A queued push's outcome is its job's audit line (`pull_requests_updated`): wait for it in a
// broker's log lines.
export async function pushAudit(logs: readonly string[], repository: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  for (let waited = 0; waited < timeoutMs; waited += 20) {
    for (const line of logs) {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.audit === "pull_requests_updated" && entry.repository === repository) return entry;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no audit line for ${repository}`);
}

/** A signed push delivery of `refs/heads/main` of `repository` (owner/name) from `installationId`, as the platform sends it. */
export async function sendPush(brokerUrl: string, secret: string, repository: string, installationId: number): Promise<{ status: number; body: Record<string, unknown> }> {
  const [owner, name] = repository.split("/");
  // Every push its own head, as on the platform (a repeated body is a replay).
  const raw = JSON.stringify({ ref: "refs/heads/main", after: randomBytes(20).toString("hex"), deleted: false, repository: { name, full_name: repository, owner: { login: owner } }, installation: { id: installationId } });
  const response = await fetch(`${brokerUrl}/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": signatureFor(secret, raw) },
    body: raw,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
