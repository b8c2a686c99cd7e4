// docs/sandbox.md lists every route the simulator answers; that list is the simulator's route table
// (simulator/route-table.ts), not a hand-kept copy. TOKENSMITH_UPDATE_DOCS=1 rewrites the doc's copy.
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { createSimulator, type Simulator } from "../simulator/index.js";
import { routeTableMarkdown } from "../simulator/route-table.js";

const DOC = new URL("../docs/sandbox.md", import.meta.url);
const START = "<!-- routes: generated from the simulator's route table (test/sandbox-route-list.test.ts) -->";
const END = "<!-- routes end -->";

let sim: Simulator;
beforeAll(async () => {
  sim = await createSimulator();
});
afterAll(async () => {
  await sim.close();
});

it("the doc's list of implemented routes is the simulator's route table", () => {
  const doc = readFileSync(DOC, "utf8");
  const from = doc.indexOf(START);
  const to = doc.indexOf(END);
  expect(from).toBeGreaterThan(-1);
  expect(to).toBeGreaterThan(from);
  const generated = routeTableMarkdown(sim.routes());
  if (process.env.TOKENSMITH_UPDATE_DOCS === "1") writeFileSync(DOC, `${doc.slice(0, from + START.length)}\n\n${generated}\n\n${doc.slice(to)}`);
  expect(doc.slice(from + START.length, to).trim()).toBe(generated);
  // What a release job calls after getting its token is in it.
  for (const row of ["| POST | `/repos/{owner}/{repo}/releases` |", "| PATCH | `/repos/{owner}/{repo}/git/refs/{ref}` |", "| PUT | `/repos/{owner}/{repo}/contents/{path}` |", "| GET | `/rate_limit` |"]) {
    expect(generated).toContain(row);
  }
});
