// The /metrics check where promtool is not installed (test/support/metrics-text.ts): a real
// exposition-format parser plus promtool's lint rules. It must accept what prom-client writes and
// refuse what promtool refuses, or admin.test.ts's check would pass on any text.
import { describe, expect, it } from "@jest/globals";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { parserCheck, promtoolCheck } from "./support/metrics-text.js";

async function exposition(): Promise<string> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Counter({ name: "demo_requests_total", help: "Requests.", labelNames: ["route"], registers: [registry] }).inc({ route: 'a "quoted"\\ \n route' });
  new Gauge({ name: "demo_depth", help: "Depth.", registers: [registry] }).set(-1.5e-3);
  new Histogram({ name: "demo_seconds", help: "Durations.", buckets: [0.1, 1], registers: [registry] }).observe(0.5);
  return registry.metrics();
}

describe("the /metrics check without promtool", () => {
  it("accepts prom-client's exposition: default metrics, escaped label values, histograms", async () => {
    expect(parserCheck(await exposition())).toEqual({ code: 0, output: "" });
  });

  it.each([
    ["a sample with an unclosed label set", 'demo_requests_total{route="a" 1\n', /^error while linting: |invalid line/],
    ["a value that is not a number", "# HELP demo_depth D.\n# TYPE demo_depth gauge\ndemo_depth twelve\n", /demo_depth: invalid value twelve/],
    ["a counter without _total", "# HELP demo_requests R.\n# TYPE demo_requests counter\ndemo_requests 1\n", /demo_requests: counter metrics should have "_total" suffix/],
    ["a family without help text", "# TYPE demo_depth gauge\ndemo_depth 1\n", /demo_depth: no help text/],
    ["the same series twice", '# HELP demo_depth D.\n# TYPE demo_depth gauge\ndemo_depth{a="1"} 1\ndemo_depth{a="1"} 2\n', /duplicate series/],
    ["an unknown type", "# HELP demo_depth D.\n# TYPE demo_depth meter\ndemo_depth 1\n", /unknown type meter/],
  ])("refuses %s, in one line per problem", (_label, text, problem) => {
    const check = parserCheck(text);
    expect(check.code).not.toBe(0);
    expect(check.output).toMatch(problem);
  });

  it("promtoolCheck answers with a number and the checker it ran, whether or not promtool is installed", async () => {
    const check = await promtoolCheck(await exposition());
    expect(check).toEqual({ code: 0, output: "", checker: expect.stringMatching(/^(promtool|parser)$/) });
    const bad = await promtoolCheck("# TYPE x counter\nx 1\n");
    expect(typeof bad.code).toBe("number");
    expect(bad.code).not.toBe(0);
  });
});
