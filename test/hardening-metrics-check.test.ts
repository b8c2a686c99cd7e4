// The /metrics check where promtool is not installed (test/support/metrics-text.ts): a real
// exposition-format parser plus promtool's lint rules. It must accept what prom-client writes and
// refuse what promtool refuses, or admin.test.ts's check would pass on any text.
import { describe, expect, it } from "@jest/globals";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { parserCheck, promtoolCheck } from "./support/metrics-text.js";

// prom-client's default gauges named `_total`, which promtool refuses (server/metrics.ts drops them too).
const MISNAMED_DEFAULTS = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

async function exposition({ misnamed = false } = {}): Promise<string> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (!misnamed) for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
  new Counter({ name: "demo_requests_total", help: "Requests.", labelNames: ["route"], registers: [registry] }).inc({ route: 'a "quoted"\\ \n route' });
  new Gauge({ name: "demo_depth", help: "Depth.", registers: [registry] }).set(-1.5e-3);
  new Histogram({ name: "demo_seconds", help: "Durations.", buckets: [0.1, 1], registers: [registry] }).observe(0.5);
  return registry.metrics();
}

describe("the /metrics check without promtool", () => {
  it("accepts prom-client's exposition: default metrics, escaped label values, histograms", async () => {
    expect(parserCheck(await exposition())).toEqual({ code: 0, output: "" });
  });

  it("refuses prom-client's default gauges named _total, as promtool does", async () => {
    const check = parserCheck(await exposition({ misnamed: true }));
    expect(check.code).toBe(3);
    for (const name of MISNAMED_DEFAULTS) expect(check.output).toContain(`${name}: non-counter metrics should not have "_total" suffix`);
  });

  it.each([
    ["a sample with an unclosed label set", 'demo_requests_total{route="a" 1\n', /^error while linting: |invalid line/],
    ["a value that is not a number", "# HELP demo_depth D.\n# TYPE demo_depth gauge\ndemo_depth twelve\n", /demo_depth: invalid value twelve/],
    ["a counter without _total", "# HELP demo_requests R.\n# TYPE demo_requests counter\ndemo_requests 1\n", /demo_requests: counter metrics should have "_total" suffix/],
    ["a family without help text", "# TYPE demo_depth gauge\ndemo_depth 1\n", /demo_depth: no help text/],
    ["the same series twice", '# HELP demo_depth D.\n# TYPE demo_depth gauge\ndemo_depth{a="1"} 1\ndemo_depth{a="1"} 2\n', /duplicate series/],
    ["an unknown type", "# HELP demo_depth D.\n# TYPE demo_depth meter\ndemo_depth 1\n", /unknown type meter/],
    ["a gauge named _total", "# HELP demo_things_total T.\n# TYPE demo_things_total gauge\ndemo_things_total 1\n", /demo_things_total: non-counter metrics should not have "_total" suffix/],
    ["a second HELP line", "# HELP demo_depth D.\n# HELP demo_depth D again.\n# TYPE demo_depth gauge\ndemo_depth 1\n", /demo_depth: second HELP line/],
    ["a second TYPE line", "# HELP demo_depth D.\n# TYPE demo_depth gauge\n# TYPE demo_depth gauge\ndemo_depth 1\n", /demo_depth: second TYPE line/],
    ["an invalid metric name", "# HELP 9demo D.\n# TYPE 9demo gauge\n9demo 1\n", /invalid metric name|invalid line/],
    ["a camelCase name", "# HELP demoDepth D.\n# TYPE demoDepth gauge\ndemoDepth 1\n", /snake_case/],
    ["a name with a colon", "# HELP demo:depth D.\n# TYPE demo:depth gauge\ndemo:depth 1\n", /should not contain ':'/],
    ["a type in the name", "# HELP demo_depth_gauge D.\n# TYPE demo_depth_gauge gauge\ndemo_depth_gauge 1\n", /should not include type 'gauge'/],
    ["an abbreviated unit", "# HELP demo_wait_ms W.\n# TYPE demo_wait_ms gauge\ndemo_wait_ms 1\n", /base units/],
    ["a sample of no declared family", "# HELP demo_depth D.\n# TYPE demo_depth gauge\ndemo_width 1\n", /demo_width: sample without a TYPE line/],
    ["an le label outside a histogram", '# HELP demo_depth D.\n# TYPE demo_depth gauge\ndemo_depth{le="1"} 1\n', /should not have "le" label/],
    ["a histogram without +Inf", '# HELP demo_seconds S.\n# TYPE demo_seconds histogram\ndemo_seconds_bucket{le="0.1"} 0\ndemo_seconds_bucket{le="1"} 1\ndemo_seconds_sum 0.5\ndemo_seconds_count 1\n', /no "\+Inf" bucket/],
    ["a histogram with unordered le", '# HELP demo_seconds S.\n# TYPE demo_seconds histogram\ndemo_seconds_bucket{le="1"} 0\ndemo_seconds_bucket{le="0.1"} 0\ndemo_seconds_bucket{le="+Inf"} 1\ndemo_seconds_sum 0.5\ndemo_seconds_count 1\n', /not in ascending order/],
    ["a histogram whose bucket counts fall", '# HELP demo_seconds S.\n# TYPE demo_seconds histogram\ndemo_seconds_bucket{le="0.1"} 2\ndemo_seconds_bucket{le="1"} 1\ndemo_seconds_bucket{le="+Inf"} 2\ndemo_seconds_sum 0.5\ndemo_seconds_count 2\n', /bucket counts fall/],
    ["a histogram whose _count is not its +Inf bucket", '# HELP demo_seconds S.\n# TYPE demo_seconds histogram\ndemo_seconds_bucket{le="+Inf"} 2\ndemo_seconds_sum 0.5\ndemo_seconds_count 3\n', /_count differs/],
    ["a histogram without _count or _sum", '# HELP demo_seconds S.\n# TYPE demo_seconds histogram\ndemo_seconds_bucket{le="+Inf"} 2\n', /histogram without _count/],
    ["a bucket without le", '# HELP demo_seconds S.\n# TYPE demo_seconds histogram\ndemo_seconds_bucket 2\ndemo_seconds_sum 0.5\ndemo_seconds_count 2\n', /bucket without "le"/],
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
