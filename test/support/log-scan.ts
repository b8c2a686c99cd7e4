import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

// What a credential looks like in a log line: used per test file (with that test's own secrets)
// and over the whole suite's logs at the end of the run.
export const SECRET_PATTERNS: ReadonlyArray<[string, RegExp]> = [
  ["a private key", /-----BEGIN [A-Z ]*PRIVATE KEY-----/],
  ["a JWT", /eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+/],
  // GitHub's pattern, `ghs_[A-Za-z0-9._]{36,}`, covers the stateless `ghs_<app id>_<JWT>` too.
  ["a platform token", /gh[sopu]_[A-Za-z0-9._]{20,}/],
];

/** The first credential-looking thing in the line, or undefined. */
export function findSecret(line: string, known: readonly string[] = []): string | undefined {
  for (const needle of known) if (needle.length >= 8 && line.includes(needle)) return "a secret the test handled";
  for (const [name, pattern] of SECRET_PATTERNS) if (pattern.test(line)) return name;
  return undefined;
}

// Jest loads this file on its own, without the test run's module mapping: it imports only node:
// builtins, and the patterns live here (fixtures.ts imports them from this file).

// The log-capture check over the whole suite: no token, JWT or private key in any line any broker
// wrote during the run. A hit fails the run.
export default function globalTeardown(globalConfig?: { testPathPatterns?: { patterns?: readonly string[] } }): void {
  const compileCache = process.env.NODE_COMPILE_CACHE;
  if (compileCache?.includes("tokensmith-compile-cache-")) rmSync(compileCache, { recursive: true, force: true });
  const dir = process.env.TOKENSMITH_TEST_LOG_DIR;
  if (!dir) return;
  let lines = 0;
  const hits: string[] = [];
  for (const file of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
      if (!line) continue;
      lines += 1;
      const found = findSecret(line);
      if (found) hits.push(`${found}: ${line.slice(0, 160)}`);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  // A run of chosen files (`npx jest test/x.test.ts`) may start no broker at all; the whole suite
  // always does, and there an empty scan would prove nothing.
  if (lines === 0 && (globalConfig?.testPathPatterns?.patterns?.length ?? 0) > 0) return void process.stdout.write("log scan: no broker log lines in the files run\n");
  if (lines === 0) throw new Error("log scan: no broker log lines were collected; the scan would prove nothing");
  if (hits.length > 0) throw new Error(`log scan: ${hits.length} of ${lines} log lines hold a credential:\n${hits.slice(0, 5).join("\n")}`);
  process.stdout.write(`log scan: ${lines} broker log lines, no token, JWT or private key\n`);
}
