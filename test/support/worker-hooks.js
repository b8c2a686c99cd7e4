// Loaded into each test worker before its first test file (`--import`, set in jest.config.mjs) and
// into jest's own process: test files are TypeScript, run by Node's own module loader through tsx,
// and their `@jest/globals` import is jest-globals.js (docs/development.md#the-test-runner).
import { registerHooks } from "node:module";
import { register } from "tsx/esm/api";

register();
const globalsShim = new URL("./jest-globals.js", import.meta.url).href;
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === "@jest/globals") return { url: globalsShim, shortCircuit: true };
    return nextResolve(specifier, context);
  },
});
