// docs/sandbox.md#faults: every example block there (and the `simulator.route()` one) runs as written (with
// `tokensmith/testing` pointed at the build: `npx tsc -p tsconfig.build.json` first), each in a
// process of its own, and passes its own assertions. There is one for each kind of fault answer,
// and one each for the path forms, the broker's own mints, the issuer's keys and the runner's
// ID-token endpoint.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, expect, it } from "@jest/globals";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TESTING = pathToFileURL(join(ROOT, "build/server/sandbox/index.js")).href;
const doc = readFileSync(join(ROOT, "docs/sandbox.md"), "utf8");
const blocks = (marker: string) => [...doc.matchAll(new RegExp(`<!-- ${marker}: ([a-z-]+) -->\\n\`\`\`js\\n([\\s\\S]*?)\`\`\``, "g"))].map((m) => [m[1]!, m[2]!] as const);
const faultExamples = blocks("fault example");
const otherExamples = blocks("sandbox example");
const routeExample = /<!-- route example -->\n```js\n([\s\S]*?)```/.exec(doc)?.[1];
const dir = mkdtempSync(join(tmpdir(), "tokensmith-fault-examples-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("the doc has one example per kind of fault answer, and one per other knob", () => {
  // FaultResponse (simulator/types.ts): an answer, one of four misbehaviours, or a held answer (HeldAnswer).
  expect(faultExamples.map(([kind]) => kind).sort()).toEqual(["garbage", "hang", "held", "reset", "status", "truncated-gzip"]);
  // FaultSpec.path's forms, the policy reader's mint a fault hits first, oidc.keyEndpoint, actions.claims.
  expect(otherExamples.map(([name]) => name).sort()).toEqual(["actions-claims", "key-endpoint", "paths", "policy-reader"]);
});

it.each([...faultExamples, ...otherExamples, ["simulator.route()", routeExample ?? "(missing)"] as const])("the %s example runs and passes", async (kind, code) => {
  expect(code).toContain('from "tokensmith/testing"');
  const file = join(dir, `${kind.replace(/\W/g, "")}.mjs`);
  writeFileSync(file, code.replaceAll('"tokensmith/testing"', JSON.stringify(TESTING)));
  const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = execFile(process.execPath, [file], { env: { PATH: process.env.PATH }, timeout: 60_000 }, (_error, _stdout, stderr) => resolve({ code: child.exitCode, stderr }));
  });
  expect(result).toEqual({ code: 0, stderr: "" });
});
