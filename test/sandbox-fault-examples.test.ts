// docs/sandbox.md#faults: every example block there (and the `simulator.route()` one) runs as written (with
// `tokensmith/testing` pointed at the build: `npx tsc -p tsconfig.build.json` first) and passes its
// own assertions. There is one for each kind of fault answer, and one each for the path forms, the
// broker's own mints, the issuer's keys and the runner's ID-token endpoint.
// The examples run one after another in one child process, each its own module imported in turn,
// as a tester's test process (a jest worker, `node --test`) starts many sandboxes: what the module
// keeps between sandboxes (the GraphQL schema, the pool of RSA keys) is what they share there too,
// and an example that needs a fresh process to pass would be a bug. That process must then end on
// its own with exit code 0 and nothing on stderr: an example that left anything open (a server, a
// socket, a timer) keeps it alive whichever example it was, and any warning shows. One process
// instead of one per example: 3.8 s of CPU instead of 13.6 s (module loading, the schema and the
// keys were paid 11 times).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, expect, it } from "@jest/globals";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TESTING = pathToFileURL(join(ROOT, "build/server/sandbox/index.js")).href;
const doc = readFileSync(join(ROOT, "docs/sandbox.md"), "utf8");
const blocks = (marker: string) => [...doc.matchAll(new RegExp(`<!-- ${marker}: ([a-z-]+) -->\\n\`\`\`js\\n([\\s\\S]*?)\`\`\``, "g"))].map((m) => [m[1]!, m[2]!] as const);
const faultExamples = blocks("fault example");
const otherExamples = blocks("sandbox example");
const routeExample = /<!-- route example -->\n```js\n([\s\S]*?)```/.exec(doc)?.[1];
const examples = [...faultExamples, ...otherExamples, ["simulator.route()", routeExample ?? "(missing)"] as const];
const dir = mkdtempSync(join(tmpdir(), "tokensmith-fault-examples-"));
/** Far above what closing takes: a process still running this long after the last example is hung. */
const HANG_BOUND_MS = 30_000;

/** Each example's outcome ("passed" or its error), and how the process that ran them all ended. */
let ran: { results: Map<string, string>; code: number | null; signal: NodeJS.Signals | null; stderr: string };

beforeAll(async () => {
  const files = examples.map(([kind, code]) => {
    const file = join(dir, `${kind.replace(/\W/g, "")}.mjs`);
    writeFileSync(file, code.replaceAll('"tokensmith/testing"', JSON.stringify(TESTING)));
    return [kind, pathToFileURL(file).href] as const;
  });
  const runner = join(dir, "run-examples.mjs");
  writeFileSync(runner, `for (const [kind, file] of ${JSON.stringify(files)}) {
  let result = "passed";
  try {
    await import(file);
  } catch (error) {
    result = String(error?.stack ?? error);
  }
  console.log(JSON.stringify({ kind, result }));
}
// Every sandbox is closed: the process should end now. Still running far later, it says what is
// still open (an unref'd timer keeps nothing alive itself).
setTimeout(() => {
  console.log(JSON.stringify({ stillOpen: process.getActiveResourcesInfo() }));
  process.exit(124);
}, ${HANG_BOUND_MS}).unref();
`);
  ran = await new Promise((resolve) => {
    const child = execFile(process.execPath, [runner], { env: { PATH: process.env.PATH }, timeout: 150_000 }, (_error, stdout, stderr) => {
      const lines = stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as { kind?: string; result?: string; stillOpen?: string[] });
      const results = new Map(lines.filter((line) => line.kind).map((line) => [line.kind!, line.result!]));
      const stillOpen = lines.find((line) => line.stillOpen);
      resolve({ results, code: child.exitCode, signal: child.signalCode, stderr: stillOpen ? `${stderr}still open after the last example: ${stillOpen.stillOpen!.join(", ")}` : stderr });
    });
  });
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("the doc has one example per kind of fault answer, and one per other knob", () => {
  // FaultResponse (simulator/types.ts): an answer, one of four misbehaviours, or a held answer (HeldAnswer).
  expect(faultExamples.map(([kind]) => kind).sort()).toEqual(["garbage", "hang", "held", "reset", "status", "truncated-gzip"]);
  // FaultSpec.path's forms, the policy reader's mint a fault hits first, oidc.keyEndpoint, actions.claims.
  expect(otherExamples.map(([name]) => name).sort()).toEqual(["actions-claims", "key-endpoint", "paths", "policy-reader"]);
});

it.each(examples)("the %s example runs and passes", (kind, code) => {
  expect(code).toContain('from "tokensmith/testing"');
  expect({ result: ran.results.get(kind), code: ran.code, signal: ran.signal, stderr: ran.stderr }).toEqual({ result: "passed", code: 0, signal: null, stderr: "" });
});
