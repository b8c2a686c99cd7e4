// Prints a scenario's result as an aligned text table, then its targets as met / NOT MET.
export function printScenario({ title, header, rows, targets = [] }) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(" | ")} |`;
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
  for (const row of rows) console.log(line(row));
  for (const [name, met] of targets) console.log(`  ${met ? "met" : "NOT MET"}: ${name}`);
}
