// Every broker log line a test produced, collected for the whole-suite scan in global-teardown.ts.
import { appendFileSync } from "node:fs";
import { join } from "node:path";

export function keepLogs(lines: readonly string[]): void {
  const dir = process.env.TOKENSMITH_TEST_LOG_DIR;
  if (!dir || lines.length === 0) return;
  appendFileSync(join(dir, `${process.pid}.log`), `${lines.join("\n")}\n`);
}
