// `npm run bench [-- scenario…]`: runs the named scenarios (all when none is named) against the
// built broker and the loopback simulator, prints one table, and exits 1 if a target was missed.
// A scenario is a module in bench/scenarios/ exporting `description` and `run()` → rows of
// { metric, value, target, ok } (ok: true, false, or null for information only).
import * as burst from "./scenarios/burst.js";
import * as dashboard from "./scenarios/dashboard.js";
import * as fleet from "./scenarios/fleet.js";
import * as releases from "./scenarios/releases.js";
import * as releasesLarge from "./scenarios/releases-large.js";
import * as token from "./scenarios/token.js";
import * as tokenPolicy from "./scenarios/token-policy.js";
import * as webhook from "./scenarios/webhook.js";

const SCENARIOS = { burst, dashboard, fleet, releases, "releases-large": releasesLarge, token, "token-policy": tokenPolicy, webhook };

const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !(name in SCENARIOS));
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario: ${unknown.join(", ")} (known: ${Object.keys(SCENARIOS).join(", ")})\n`);
  process.exit(2);
}

const rows = [];
for (const name of requested.length > 0 ? requested : Object.keys(SCENARIOS)) {
  const scenario = SCENARIOS[name];
  process.stderr.write(`bench: ${name}: ${scenario.description}\n`);
  for (const row of await scenario.run()) rows.push({ scenario: name, ...row });
}

const table = [["scenario", "metric", "value", "target", "result"], ...rows.map((r) => [r.scenario, r.metric, r.value, r.target, r.ok === null ? "" : r.ok ? "ok" : "MISSED"])];
const widths = table[0].map((_, column) => Math.max(...table.map((row) => row[column].length)));
for (const row of table) process.stdout.write(`${row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd()}\n`);
process.exitCode = rows.some((r) => r.ok === false) ? 1 : 0;
