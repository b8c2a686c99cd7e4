import type { Config } from "jest";

// ESM mode: the package is "type": "module" and jose, @octokit/* and @actions/core are ESM-only.
// `npm test` sets NODE_OPTIONS=--experimental-vm-modules.
const config: Config = {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  roots: ["<rootDir>/test"],
  testMatch: ["**/*.test.ts"],
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  transform: {
    "^.+\\.ts$": ["ts-jest", { useESM: true, tsconfig: "tsconfig.json", diagnostics: { warnOnly: false } }],
  },
  testTimeout: 30000,
  globalSetup: "<rootDir>/test/support/global-setup.ts",
  globalTeardown: "<rootDir>/test/support/log-scan.ts",
  // The default output, then the run's slowest files (issue 26: a slow file is named every run).
  reporters: ["default", "<rootDir>/test/support/slowest-reporter.js"],
  maxWorkers: 2,
};

export default config;
