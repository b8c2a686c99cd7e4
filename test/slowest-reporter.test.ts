// The reporter that ends every run with its slowest files (test/support/slowest-reporter.js,
// named in jest.config.mjs): the ten slowest, slowest first, with their test counts.
import { describe, expect, it, jest } from "@jest/globals";
import SlowestReporter, { slowestLines, type FileResult } from "./support/slowest-reporter.js";

const file = (name: string, seconds: number, tests = 1): FileResult => ({
  testFilePath: `/repo/test/${name}`,
  perfStats: { start: 1_000, end: 1_000 + seconds * 1000 },
  numPassingTests: tests,
  numFailingTests: 0,
  numPendingTests: 0,
});

describe("slowest files reporter", () => {
  it("lists the ten slowest files, slowest first, relative to the root, with their test counts", () => {
    const results = Array.from({ length: 12 }, (_, i) => file(`f${i}.test.ts`, i + 0.2, i));
    const lines = slowestLines(results, "/repo");
    expect(lines).toHaveLength(10);
    expect(lines[0]).toBe("  11.2 s  test/f11.test.ts (11 tests)");
    expect(lines[9]).toBe("   2.2 s  test/f2.test.ts (2 tests)");
    expect(lines.join("\n")).not.toContain("f1.test.ts");
    expect(slowestLines([file("one.test.ts", 0.04, 1)], "/repo")).toEqual(["   0.0 s  test/one.test.ts (1 test)"]);
  });

  it("counts failing and pending tests too, and orders equal times by name", () => {
    const failing = { ...file("b.test.ts", 3, 2), numFailingTests: 1, numPendingTests: 1 };
    expect(slowestLines([failing, file("a.test.ts", 3, 5)], "/repo", 2)).toEqual(["   3.0 s  test/a.test.ts (5 tests)", "   3.0 s  test/b.test.ts (4 tests)"]);
  });

  it("prints the list and the run's totals at the end of a run, nothing for an empty run", () => {
    const write = jest.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      const reporter = new SlowestReporter({ rootDir: "/repo" });
      reporter.onRunComplete(undefined, { testResults: [], numTotalTests: 0, numTotalTestSuites: 0, startTime: Date.now() });
      expect(write).not.toHaveBeenCalled();
      reporter.onRunComplete(undefined, { testResults: [file("x.test.ts", 1.5, 3)], numTotalTests: 3, numTotalTestSuites: 1, startTime: Date.now() - 2_000 });
      const printed = String(write.mock.calls[0]![0]);
      expect(printed).toMatch(/^\nSlowest test files \(of 1; 3 tests; \d+\.\d s in jest\):\n   1\.5 s  test\/x\.test\.ts \(3 tests\)\n$/);
    } finally {
      write.mockRestore();
    }
  });
});
