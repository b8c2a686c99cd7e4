// `npm test`'s first step: type-check the whole project (tests, scripts and benches included) and
// build what the tests run (build/: the broker, the CLI, the simulator), at the same time. The two
// tsc runs (TypeScript 7, the native compiler: about 7 and 4 s of CPU) share nothing, so on two cores
// this shortens the wait (docs/development.md#test-time). Exits 1, after both finish, if either failed.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

// TypeScript 7 exports no bin/ path: found beside its package.json.
const tsc = join(dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin/tsc");
const run = (args) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [tsc, ...args], { stdio: "inherit" });
    child.once("error", () => resolve(1));
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });

const codes = await Promise.all([run(["-p", "tsconfig.json", "--noEmit"]), run(["-p", "tsconfig.build.json"])]);
process.exitCode = codes.some((code) => code !== 0) ? 1 : 0;
