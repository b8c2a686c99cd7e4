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
