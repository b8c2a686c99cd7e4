// The test runner's time limits (docs/development.md#the-test-runner): jest-light-runner runs a
// test until it settles, so test/support/jest-globals.js races each test and hook against its
// limit. Run through jest itself, in process (`-i`), on a fixture whose cases each expect one outcome.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "@jest/globals";

type Result = { testResults: Array<{ assertionResults: Array<{ title: string; status: string; failureMessages: string[] }> }> };

describe("test time limits", () => {
  it("fails a test or hook that outlives its limit with jest's message, and only that one", async () => {
    const run = await promisify(execFile)(process.execPath, ["node_modules/jest/bin/jest.js", "-i", "--json", "--roots", "<rootDir>/test/fixtures/runner", "--testMatch", "**/*.fixture.ts", "--reporters", "default", "--globalSetup", "", "--globalTeardown", ""], { encoding: "utf8", timeout: 20_000 }).catch((error: { stdout: string }) => error);
    const results = (JSON.parse(run.stdout) as Result).testResults.flatMap((file) => file.assertionResults);
    const outcome = Object.fromEntries(results.map(({ title, status, failureMessages }) => {
      const limit = failureMessages.join("").match(/Exceeded timeout of \d+ ms for (a test|a hook)/)?.[0];
      return [title, limit ? `${status}: ${limit}` : status];
    }));
    expect(outcome).toEqual({
      "a test that never settles": "failed: Exceeded timeout of 300 ms for a test",
      "a row that takes 1 × 40 ms against 100 ms": "passed",
      "a row that takes 4 × 40 ms against 100 ms": "failed: Exceeded timeout of 100 ms for a test",
      "a quick test under the default limit": "passed",
      "after the hook": expect.stringMatching(/^(passed|failed)/) as unknown as string,
      "(beforeAll)": "failed: Exceeded timeout of 200 ms for a hook",
    });
  });
});
