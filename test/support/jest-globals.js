// What `import { describe, expect, it, … } from "@jest/globals"` gives a test file: jest's own
// functions, as jest-light-runner installs them on each worker's globalThis (jest-circus, expect,
// jest-mock), with the one thing that runner leaves out put back: a time limit on every test and
// hook. worker-hooks.js points the import here (docs/development.md#the-test-runner).
import { bind } from "jest-each";
import { TEST_TIMEOUT_MS } from "./test-timeout.js";

const runner = globalThis;
if (typeof runner.it !== "function") throw new Error("@jest/globals: load test files through jest (npx jest test/<file>.test.ts)");

/** `fn`, failing with jest's own message once `ms` pass before it settles. */
function limited(fn, ms = TEST_TIMEOUT_MS, what = "a test") {
  if (typeof fn !== "function") return fn;
  if (fn.length > 0) throw new Error("tokensmith tests return a promise; a done callback is not supported");
  return function limitedTest() {
    let timer;
    const expired = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Exceeded timeout of ${ms} ms for ${what}.\nAdd a timeout value to this test to increase the timeout, if this is a long-running test.`)), ms);
    });
    return Promise.race([Promise.resolve().then(() => fn.call(this)), expired]).finally(() => clearTimeout(timer));
  };
}

function testFunction(base) {
  const run = (name, fn, ms) => base(name, limited(fn, ms), ms);
  run.only = (name, fn, ms) => base.only(name, limited(fn, ms), ms);
  run.skip = base.skip;
  run.todo = base.todo;
  run.each = bind(run, false);
  run.only.each = bind(run.only, false);
  run.skip.each = bind(run.skip, false);
  return run;
}

const hook = (base, what) => (fn, ms) => base(limited(fn, ms, what), ms);

export const it = testFunction(runner.it);
export const test = it;
// describe takes no time limit: jest-circus's own, with its own `.each`.
export const describe = runner.describe;
export const beforeAll = hook(runner.beforeAll, "a hook");
export const afterAll = hook(runner.afterAll, "a hook");
export const beforeEach = hook(runner.beforeEach, "a hook");
export const afterEach = hook(runner.afterEach, "a hook");
export const { expect, jest } = runner;
