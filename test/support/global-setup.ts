import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Test workers inherit this: they append every broker log line there (log-sink.ts).
export default function globalSetup(): void {
  process.env.TOKENSMITH_TEST_LOG_DIR = mkdtempSync(join(tmpdir(), "tokensmith-logs-"));
}
