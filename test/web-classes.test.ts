// isRequest / isHeaders (server/web-classes.ts) in a new Node process, as the broker starts: they
// classify what fetch's callers pass, and they leave Node's own fetch implementation unloaded for a
// string, a URL, a plain record or pairs (loading it is some 17 ms of a new broker's first request).
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";

const built = fileURLToPath(new URL("../build/server/web-classes.js", import.meta.url));

function inFreshProcess(script: string): unknown {
  const program = `import { isHeaders, isRequest } from ${JSON.stringify(built)};
const fetchLoaded = () => process.moduleLoadList.some((name) => name.includes("deps/undici"));
${script}`;
  return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8" }));
}

describe("isRequest and isHeaders", () => {
  it("answer false for strings, URLs, records and pairs without loading Node's fetch", () => {
    const seen = inFreshProcess(`
const answers = [
  isRequest("https://api.github.com/app"), isRequest(new URL("https://api.github.com/app")), isRequest(undefined), isRequest(null),
  isHeaders({ authorization: "Bearer x" }), isHeaders(Object.create(null)), isHeaders([["accept", "application/json"]]), isHeaders(undefined),
];
console.log(JSON.stringify({ answers, loaded: fetchLoaded() }));`);
    expect(seen).toEqual({ answers: [false, false, false, false, false, false, false, false], loaded: false });
  });

  it("answer true for fetch's own objects (and only then is it loaded)", () => {
    const seen = inFreshProcess(`
const before = fetchLoaded();
const answers = [isRequest(new Request("https://api.github.com/app")), isHeaders(new Headers({ accept: "x" })), isRequest(new Headers()), isHeaders(new Request("https://api.github.com/app")), isHeaders(new Map())];
console.log(JSON.stringify({ before, answers, after: fetchLoaded() }));`);
    expect(seen).toEqual({ before: false, answers: [true, true, false, false, false], after: true });
  });
});
