// `npm test` (arguments go to jest: `npm test -- test/token.test.ts`). Builds what the tests run
// (build/: the broker, the CLI, the simulator), then runs jest, while the whole project (tests,
// scripts and benches included) is type-checked beside them: jest starts once the build is done
// (about 3 s with TypeScript 7), not once the type check is too (about 6 s for both), and the type
// check's few seconds of CPU overlap the run (docs/development.md#test-time). The type check's
// output is printed after jest's, so an error is not lost in the run's; the exit code is 1 if the
// build, the type check or jest failed.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
// TypeScript 7 exports no bin/ path: found beside its package.json.
const tsc = join(dirname(require.resolve("typescript/package.json")), "bin/tsc");
const jest = require.resolve("jest/bin/jest");

/** Runs node `args`; resolves with its exit code (1 for a signal or a failed start) and, if `capture`, its output. */
function run(args, capture = false) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit" });
    let output = "";
    if (capture) for (const stream of [child.stdout, child.stderr]) stream.on("data", (chunk) => (output += chunk));
    child.once("error", (error) => resolve({ code: 1, output: `${output}${error.message}\n` }));
    child.once("close", (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

const typecheck = run([tsc, "-p", "tsconfig.json", "--noEmit"], true);
const build = await run([tsc, "-p", "tsconfig.build.json"]);
const tests = build.code === 0 ? await run([jest, ...process.argv.slice(2)]) : { code: 1 };
const checked = await typecheck;
if (checked.code !== 0) process.stderr.write(`\ntype check (tsc -p tsconfig.json --noEmit) failed:\n${checked.output}`);
else process.stdout.write("type check: no errors\n");
if (build.code !== 0) process.stderr.write("build (tsc -p tsconfig.build.json) failed: jest was not run\n");
process.exitCode = build.code !== 0 || tests.code !== 0 || checked.code !== 0 ? 1 : 0;
