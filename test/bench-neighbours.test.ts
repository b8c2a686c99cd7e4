// `npm run bench -- neighbours` (docs/operations.md#noisy-neighbours) in a tiny run: 1 s per phase
// of B's, A's flood 60 requests (10 of each kind, every one answered: a flood that lasted the phase
// kept the machine's two cores busy for it, and could end before a slow first answer of a kind came
// back), over the built broker, the simulator and the suite's Redis, as real processes. It checks that the
// scenario completes and prints its table for both topologies with every row, and that the flood
// really reached the broker (each kind of A's traffic answered); no timing is asserted. The brokers'
// log lines go to the suite's log directory, scanned for credentials at the end of the run.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { REDIS_URL } from "./support/redis-url.js";

const RUN = fileURLToPath(new URL("../bench/run.js", import.meta.url));
const SECONDS = 1;
const B_RATE = 2;
const A_REQUESTS = 60;
const KINDS = ["not installed, replayed", "denied, 20 repositories", "valid token, replayed", "pull_request", "push, replayed", "fuzz"];

function bench(): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--expose-gc", RUN, "--no-link", "--seconds", String(SECONDS), "neighbours"],
      { env: { ...process.env, BENCH_BROKER_LOG: join(process.env.TOKENSMITH_TEST_LOG_DIR!, `bench-neighbours-${process.pid}.log`), BENCH_NEIGHBOURS_REDIS: REDIS_URL, BENCH_NEIGHBOURS_B_RATE: String(B_RATE), BENCH_NEIGHBOURS_CONNECTIONS: "8", BENCH_NEIGHBOURS_A_REQUESTS: String(A_REQUESTS), BENCH_NEIGHBOURS_SETTLE_MS: "500" }, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? -1) : 0, stdout, stderr }),
    );
  });
}

/** The table's rows as { metric: value } for the scenario (columns are two or more spaces apart). */
function table(stdout: string): Map<string, { value: string; result: string }> {
  const lines = stdout.trimEnd().split("\n");
  expect(lines[0]).toMatch(/^scenario\s{2,}metric\s{2,}loopback/);
  const rows = new Map<string, { value: string; result: string }>();
  for (const line of lines.slice(1)) {
    const cells = line.split(/\s{2,}/);
    expect(cells[0]).toBe("neighbours");
    rows.set(cells[1]!, { value: cells[2] ?? "", result: cells.at(-1) ?? "" });
  }
  return rows;
}

describe("npm run bench -- neighbours (tiny run)", () => {
  it("completes and prints, per topology, B's success rate and latencies, A's requests per kind and the points each spent", async () => {
    const run = await bench();
    // 0: every target held; 1: one was missed (a tiny run on a busy machine may miss the latency's). Never a crash (2, or a signal).
    expect([0, 1]).toContain(run.code);
    expect(run.stderr).not.toMatch(/failed:/);
    const rows = table(run.stdout);
    expect([...rows.keys()].some((metric) => metric.startsWith("did not run"))).toBe(false);
    for (const topology of ["one instance", "two instances, one Redis"]) {
      const row = (metric: string) => {
        const found = rows.get(`${topology}: ${metric}`);
        if (!found) throw new Error(`no row "${topology}: ${metric}" in\n${run.stdout}`);
        return found;
      };
      const jobs = SECONDS * B_RATE;
      // Every one of B's jobs was answered in both phases (whatever the status).
      expect(row("B answers 200, quiet / under A's flood").value).toMatch(new RegExp(`^\\d+/${jobs} \\(\\d+\\.\\d %\\) / \\d+/${jobs} \\(\\d+\\.\\d %\\)$`));
      expect(row("B answers 200, quiet / under A's flood").result).toMatch(/^(ok|MISSED)$/);
      expect(row("B p50 quiet → flood (ratio)").value).toMatch(/^\d+\.\d ms → \d+\.\d ms \(\d+\.\d\d×\)$/);
      expect(row("B p99 quiet → flood (ratio)").value).toMatch(/^\d+\.\d ms → \d+\.\d ms \(\d+\.\d\d×\)$/);
      const requests = /^(\d+) \(/.exec(row("A requests in the flood (per second)").value);
      expect(Number(requests?.[1])).toBeGreaterThan(KINDS.length);
      // Each kind of A's traffic reached the broker and was answered as main answers it.
      const answers = (kind: string) => row(`A ${kind}: answers`).value;
      for (const kind of KINDS) expect(answers(kind)).toMatch(/^\d+×\d{3}( \d+×\d{3})*$/);
      expect(answers("not installed, replayed")).toMatch(/×404/);
      expect(answers("denied, 20 repositories")).toMatch(/×403/);
      // One mint at most: the first answer may be missing from the flood's counts when the load
      // generator gave up waiting for it (autocannon's 10 s; its mint is the one slow request of that kind).
      expect(answers("valid token, replayed")).toMatch(/^(1×200 )?\d+×409$/);
      expect(answers("pull_request")).toMatch(/×202/);
      expect(answers("push, replayed")).toMatch(/×202/);
      expect(answers("fuzz")).toMatch(/×4\d\d/);
      // The points are the simulator's count: B minted each of its jobs (5 points a mint).
      const points = /^(\d+) \/ (\d+)$/.exec(row("App points spent in the flood: A / B (GitHub: 900 a minute, shared)").value);
      expect(points).not.toBeNull();
      expect(Number(points![2])).toBeGreaterThanOrEqual(5 * Number(/^(\d+)\//.exec(row("B answers 200, quiet / under A's flood").value.split(" / ")[1]!)![1]));
      expect(row("target (B 100 % 200, p99 ≤ 2× quiet, A within its share)").value).toMatch(/^(holds|does not hold)$/);
    }
  }, 300_000);
});
