// Reading the Prometheus text exposition in tests: one sample's value by name and labels.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";

/** The value of the sample `name` whose labels include every one given; undefined when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => have[key] === value)) return Number(match[3]);
  }
  return undefined;
}

/** Every label value in the exposition (to check none carries a repository, path or token). */
export function labelValues(text: string): string[] {
  return text
    .split("\n")
    .filter((line) => !line.startsWith("#"))
    .flatMap((line) => [...line.matchAll(/[a-zA-Z_][a-zA-Z0-9_]*="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!));
}

/**
 * `promtool check metrics` on the exposition where promtool is installed (Debian's prometheus
 * package); where it is not, the same checks through a real exposition-format parser
 * (parse-prometheus-text-format, an npm package) plus promtool's lint rules, so the check never
 * needs a system package and is never skipped. `checker` says which one ran.
 */
export function promtoolCheck(text: string): Promise<{ code: number; output: string; checker: "promtool" | "parser" }> {
  return new Promise((resolve) => {
    const child = execFile("promtool", ["check", "metrics"], { timeout: 20_000 }, (error, stdout, stderr) => {
      const code = (error as { code?: unknown } | null)?.code;
      if (code === "ENOENT") return resolve({ ...parserCheck(text), checker: "parser" });
      resolve({ code: error ? (typeof code === "number" ? code : 1) : 0, output: `${stdout}${stderr}`, checker: "promtool" });
    });
    child.stdin!.on("error", () => undefined); // EPIPE when promtool is missing: the callback answers
    child.stdin!.end(text);
  });
}

interface Family {
  name: string;
  help: string;
  type: string;
  metrics: unknown[];
}
const parseExposition = createRequire(import.meta.url)("parse-prometheus-text-format") as (text: string) => Family[];

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
// Go's ParseFloat, which promtool uses: Inf, Infinity and NaN in any case (prom-client writes "Nan").
const VALUE = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|[+-]?inf(?:inity)?|nan)$/i;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*")*,?)?\})? (\S+)(?: (-?\d+))?$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/** What `promtool check metrics` reports, without promtool: one line per problem, code 3 like promtool's lint failure. */
export function parserCheck(text: string): { code: number; output: string } {
  const problems: string[] = [];
  try {
    parseExposition(text);
  } catch (error) {
    return { code: 1, output: `error while linting: ${(error as Error).message}\n` };
  }
  // The parser is lenient (it reads any two words as a sample): the grammar, line by line.
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const seen = new Set<string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const comment = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
    if (comment) {
      const [, kind, name, rest = ""] = comment;
      if (!NAME.test(name!)) problems.push(`${name}: invalid metric name`);
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) problems.push(`${name}: unknown type ${rest}`);
        if (types.has(name!)) problems.push(`${name}: second TYPE line`);
        types.set(name!, rest);
      } else helps.add(name!);
      continue;
    }
    if (line.startsWith("#")) continue;
    const match = SAMPLE.exec(line);
    if (!match) {
      problems.push(`invalid line: ${line}`);
      continue;
    }
    if (!VALUE.test(match[3]!)) problems.push(`${match[1]}: invalid value ${match[3]}`);
    const series = `${match[1]}${match[2] ?? ""}`;
    if (seen.has(series)) problems.push(`${series}: duplicate series`);
    seen.add(series);
  }
  for (const [name, type] of types) {
    if (!helps.has(name)) problems.push(`${name}: no help text`);
    if (type === "counter" && !name.endsWith("_total")) problems.push(`${name}: counter metrics should have "_total" suffix`);
  }
  return problems.length ? { code: 3, output: problems.map((p) => `${p}\n`).join("") } : { code: 0, output: "" };
}

export async function scrape(adminUrl: string): Promise<string> {
  const response = await fetch(`${adminUrl}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}
