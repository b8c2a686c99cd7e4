// Types for slowest-reporter.js (plain JavaScript because jest loads reporters untransformed).
export interface FileResult {
  testFilePath: string;
  perfStats: { start: number; end: number };
  numPassingTests: number;
  numFailingTests: number;
  numPendingTests: number;
}
export function slowestLines(results: readonly FileResult[], rootDir: string, count?: number): string[];
export default class SlowestReporter {
  constructor(globalConfig: { rootDir: string });
  onRunComplete(contexts: unknown, results: { testResults: readonly FileResult[]; numTotalTests: number; numTotalTestSuites: number; startTime: number }): void;
}
