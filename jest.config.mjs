// ESM mode: the package is "type": "module" and jose, @octokit/* and @actions/core are ESM-only.
// `npm test` sets NODE_OPTIONS=--experimental-vm-modules.
// Plain JavaScript, not TypeScript: jest reads a .ts config through ts-node, which type-checks it
// (3.5 s of CPU before the first test file starts).
/** @type {import("jest").Config} */
const config = {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  transform: {
    // swc strips the types, nothing more: `npm test` type-checks the whole project with tsc first,
    // and the tsconfig's isolatedModules keeps every file transpilable alone. ts-jest took about
    // 2.3 s more CPU per file on a fresh clone's cold cache (docs/development.md#test-time).
    "^.+\\.ts$": ["@swc/jest", { jsc: { parser: { syntax: "typescript" }, target: "es2022" } }],
  },
  testTimeout: 30000,
  globalSetup: "<rootDir>/test/support/global-setup.ts",
  // Node 22's VM contexts lack Symbol.asyncDispose (test/support/dispose-symbols.ts).
  setupFiles: ["<rootDir>/test/support/dispose-symbols.ts"],
  globalTeardown: "<rootDir>/test/support/log-scan.ts",
  // The default output, then the run's slowest files (issue 26: a slow file is named every run).
  reporters: ["default", "<rootDir>/test/support/slowest-reporter.js"],
  // Twice the cores of the 2-core machines this runs on: most test time is spent waiting on spawned
  // brokers, the simulator and real sockets, not on the CPU. Measured on Node 24, whole suite
  // (1,704 tests): 2 workers 161.6 s, 3 workers 126.0 s, 4 workers 106.1 s in jest, all passing.
  maxWorkers: 4,
};

export default config;
