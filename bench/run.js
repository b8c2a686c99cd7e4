// `npm run bench [-- [--link 40ms/100mbit | --no-link] [--seconds N] scenario…]`: runs the named scenarios (all
// when none is named) against the built broker and the simulator, prints one table, and exits 1
// if a target was missed. The releases, token, fleet and webhook scenarios run twice: on loopback
// (the simulator's own per-request latency, as before) and with the simulator behind an emulated
// network link (simulator/link.ts; default 40 ms round trip, 100 Mbit/s, one round trip per new
// connection), and print beside the link's figure the link's floor for that work and our ratio to
// it. `--no-link` runs loopback only. `--seconds N`: how long the scenarios that take a duration
// run (`neighbours`: each phase; `token-policy`: each case's rounds), their default otherwise.
// A scenario is a module in bench/scenarios/ exporting `description` and `run({ link })` → rows of
// { metric, value | loopback/link, floor?, ratio?, target, ok } (ok: true, false, or null for
// information only, or [loopback, link] of those; `value` is a loopback-only figure).
import { parseArgs } from "node:util";

// Each scenario's module is loaded only when it runs, and the link parser only for a link: together
// they import most of the built broker and simulator (about 1 s of CPU before a scenario starts).
const SCENARIOS = {
  burst: () => import("./scenarios/burst.js"),
  dashboard: () => import("./scenarios/dashboard.js"),
  fleet: () => import("./scenarios/fleet.js"),
  neighbours: () => import("./scenarios/neighbours.js"),
  releases: () => import("./scenarios/releases.js"),
  "releases-large": () => import("./scenarios/releases-large.js"),
  token: () => import("./scenarios/token.js"),
  "token-policy": () => import("./scenarios/token-policy.js"),
  webhook: () => import("./scenarios/webhook.js"),
};
const DEFAULT_LINK = "40ms/100mbit";

const { values: flags, positionals: requested } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: { link: { type: "string", default: DEFAULT_LINK }, "no-link": { type: "boolean" }, seconds: { type: "string" } },
});
const link = flags["no-link"] ? undefined : (await import("../build/server/sandbox/start-sandbox.js")).parseLink(flags.link);
if (!flags["no-link"] && !link) {
  process.stderr.write(`--link must read RTT/BANDWIDTH, e.g. ${DEFAULT_LINK}, got ${flags.link}\n`);
  process.exit(2);
}
const seconds = flags.seconds === undefined ? undefined : Number(flags.seconds);
if (seconds !== undefined && !(seconds > 0)) {
  process.stderr.write(`--seconds must be a positive number, got ${flags.seconds}\n`);
  process.exit(2);
}
const unknown = requested.filter((name) => !(name in SCENARIOS));
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario: ${unknown.join(", ")} (known: ${Object.keys(SCENARIOS).join(", ")})\n`);
  process.exit(2);
}

const rows = [];
const started = performance.now();
for (const name of requested.length > 0 ? requested : Object.keys(SCENARIOS)) {
  const t0 = performance.now();
  try {
    const scenario = await SCENARIOS[name]();
    process.stderr.write(`bench: ${name}: ${scenario.description}\n`);
    for (const row of await scenario.run({ link, ...(seconds === undefined ? {} : { seconds }) })) rows.push({ scenario: name, ...row });
  } catch (error) {
    // One scenario that cannot run (e.g. no Chromium for the dashboard's) does not lose the others' rows.
    process.stderr.write(`bench: ${name}: failed: ${error?.stack ?? error}\n`);
    rows.push({ scenario: name, metric: `did not run: ${String(error?.message ?? error).split("\n")[0].slice(0, 120)}`, ok: false });
  }
  process.stderr.write(`bench: ${name}: ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
}
process.stderr.write(`bench: ${((performance.now() - started) / 1000).toFixed(0)} s in all\n`);

const linkHeader = link ? `link ${link.rttMs} ms/${link.mbit} Mbit` : "link";
const header = ["scenario", "metric", "loopback", linkHeader, "link floor", "÷ floor", "target", "result"];
const table = [
  header,
  ...rows.map((r) => [r.scenario, r.metric, r.loopback ?? r.value ?? "", r.link ?? "", r.floor ?? "", r.ratio ?? "", r.target ?? "", result(r.ok)]),
];
const widths = header.map((_, column) => Math.max(...table.map((row) => row[column].length)));
for (const row of table) process.stdout.write(`${row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd()}\n`);
// Exit now: a scenario that failed half-way may have left a server or a child behind.
process.exit(rows.some((r) => [r.ok].flat().includes(false)) ? 1 : 0);

/** ok: true, false, null (information), or one per column ([loopback, link]): "ok / MISSED". */
function result(ok) {
  if (Array.isArray(ok)) return ok.map((one) => (one === null || one === undefined ? "-" : one ? "ok" : "MISSED")).join(" / ");
  return ok === null || ok === undefined ? "" : ok ? "ok" : "MISSED";
}
