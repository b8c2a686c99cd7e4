// A jest reporter that ends a run with its slowest test files and the count of tests, so a slow
// file is named in every run (issue 26: no file over 20 s) and a dropped test shows in the count.
// Plain JavaScript: jest loads reporters without transforming them.

/**
 * The `count` slowest files of a run, slowest first, one line each: seconds, file, tests.
 * @param {ReadonlyArray<{ testFilePath: string; perfStats: { start: number; end: number }; numPassingTests: number; numFailingTests: number; numPendingTests: number }>} results
 * @param {string} rootDir
 * @param {number} count
 * @returns {string[]}
 */
export function slowestLines(results, rootDir, count = 10) {
  return results
    .map((result) => ({
      seconds: Math.max(0, result.perfStats.end - result.perfStats.start) / 1000,
      file: result.testFilePath.startsWith(`${rootDir}/`) ? result.testFilePath.slice(rootDir.length + 1) : result.testFilePath,
      tests: result.numPassingTests + result.numFailingTests + result.numPendingTests,
    }))
    .sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file))
    .slice(0, count)
    .map(({ seconds, file, tests }) => `${seconds.toFixed(1).padStart(6)} s  ${file} (${tests} test${tests === 1 ? "" : "s"})`);
}

export default class SlowestReporter {
  /** @param {{ rootDir: string }} globalConfig */
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  /** @param {unknown} _contexts @param {{ testResults: Parameters<typeof slowestLines>[0]; numTotalTests: number; numTotalTestSuites: number; startTime: number }} results */
  onRunComplete(_contexts, results) {
    if (results.testResults.length === 0) return;
    const wall = ((Date.now() - results.startTime) / 1000).toFixed(1);
    const lines = slowestLines(results.testResults, this.rootDir);
    process.stdout.write(`\nSlowest test files (of ${results.numTotalTestSuites}; ${results.numTotalTests} tests; ${wall} s in jest):\n${lines.join("\n")}\n`);
  }
}
