// Test files run in Node's own module loader, not in jest's per-file module registry: the
// jest-light-runner runner, one child process per worker, TypeScript through tsx. A worker loads
// the broker's, the simulator's and their libraries' modules once, not once per test file
// (docs/development.md#the-test-runner). Plain JavaScript: jest reads this file itself.
import { fileURLToPath } from "node:url";
import { TEST_TIMEOUT_MS } from "./test/support/test-timeout.js";

// The workers are forked with jest's own execArgv; `--runInBand` runs the files in this process.
const workerHooks = fileURLToPath(new URL("./test/support/worker-hooks.js", import.meta.url));
if (!process.execArgv.includes(workerHooks)) process.execArgv.push("--import", workerHooks);
await import("./test/support/worker-hooks.js");

/** @type {import("jest").Config} */
const config = {
  runner: "jest-light-runner/child-process",
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  // Only jest's own process transforms TypeScript (the global setup and teardown).
  transform: { "^.+\\.ts$": ["@swc/jest", { jsc: { parser: { syntax: "typescript" }, target: "es2022" } }] },
  testTimeout: TEST_TIMEOUT_MS,
  globalSetup: "<rootDir>/test/support/global-setup.ts",
  globalTeardown: "<rootDir>/test/support/log-scan.ts",
  // The default output, then the run's slowest files (issue 26: a slow file is named every run).
  reporters: ["default", "<rootDir>/test/support/slowest-reporter.js"],
  // Three times the cores of the 2-core machines this runs on: many files spend most of their time
  // waiting (deadlines, retries, a slow key store, spawned brokers), and a worker costs little now
  // that it loads the modules once. Whole suite, two runs each, alternating: 4 workers 139.4 and
  // 136.9 s, 6 workers 138.7 and 125.9 s (docs/development.md#test-time).
  maxWorkers: 6,
};

export default config;
