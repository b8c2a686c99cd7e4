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

/**
 * What `promtool check metrics` reports, without promtool: one line per problem, code 3 like
 * promtool's lint failure. The grammar line by line (the parser above is lenient), the families'
 * consistency that Prometheus's text parser enforces (one TYPE and HELP each, samples that belong
 * to their family, histograms whose `le` buckets ascend to `+Inf` with counts that never fall and
 * a `_count` equal to the `+Inf` bucket), and promlint's rules for the kinds of series we emit
 * (`_total` on counters only, snake_case names, no type or abbreviated unit in a name, no `:`,
 * `le` and `quantile` reserved). Stricter than promtool where promtool only warns: this check
 * stands in for it, so it must not be weaker.
 */
export function parserCheck(text: string): { code: number; output: string } {
  const problems: string[] = [];
  try {
    parseExposition(text);
  } catch (error) {
    return { code: 1, output: `error while linting: ${(error as Error).message}\n` };
  }
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const seen = new Set<string>();
  /** Histogram series (the labels other than `le`) → its buckets in the order written, its count. */
  const histograms = new Map<string, { family: string; buckets: Array<{ le: number; value: number }>; count?: number; sum?: boolean }>();
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
      } else {
        if (helps.has(name!)) problems.push(`${name}: second HELP line`);
        helps.add(name!);
      }
      continue;
    }
    if (line.startsWith("#")) continue;
    const match = SAMPLE.exec(line);
    if (!match) {
      problems.push(`invalid line: ${line}`);
      continue;
    }
    const [, name, labelText = "", value] = match as unknown as [string, string, string | undefined, string];
    if (!VALUE.test(value)) problems.push(`${name}: invalid value ${value}`);
    const series = `${name}${labelText}`;
    if (seen.has(series)) problems.push(`${series}: duplicate series`);
    seen.add(series);
    const labels = [...labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!] as const);
    const family = familyOf(name, types);
    const type = family === undefined ? undefined : types.get(family);
    if (family === undefined) problems.push(`${name}: sample without a TYPE line of its family`);
    for (const [label] of labels) {
      if (/[A-Z]/.test(label) && /[a-z]/.test(label)) problems.push(`${name}: label names should be written in 'snake_case' not 'camelCase'`);
      if (label === "le" && type !== "histogram") problems.push(`${name}: non-histogram metrics should not have "le" label`);
      if (label === "quantile" && type !== "summary") problems.push(`${name}: non-summary metrics should not have "quantile" label`);
    }
    if (type !== "histogram" || family === undefined) continue;
    const key = `${family}{${labels.filter(([label]) => label !== "le").map(([l, v]) => `${l}=${v}`).join(",")}}`;
    const histogram = histograms.get(key) ?? { family, buckets: [] };
    histograms.set(key, histogram);
    if (name === `${family}_bucket`) {
      const le = labels.find(([label]) => label === "le")?.[1];
      if (le === undefined) problems.push(`${series}: histogram bucket without "le" label`);
      else histogram.buckets.push({ le: le === "+Inf" ? Infinity : Number(le), value: Number(value) });
    } else if (name === `${family}_count`) histogram.count = Number(value);
    else if (name === `${family}_sum`) histogram.sum = true;
  }
  for (const [name, type] of types) {
    if (!helps.has(name)) problems.push(`${name}: no help text`);
    if (type === "counter" && !name.endsWith("_total")) problems.push(`${name}: counter metrics should have "_total" suffix`);
    if (type !== "counter" && name.endsWith("_total")) problems.push(`${name}: non-counter metrics should not have "_total" suffix`);
    if (type !== "histogram" && /_(bucket|count|sum)$/.test(name)) problems.push(`${name}: non-histogram and non-summary metrics should not have "${name.slice(name.lastIndexOf("_"))}" suffix`);
    if (/[A-Z]/.test(name) && /[a-z]/.test(name)) problems.push(`${name}: metric names should be written in 'snake_case' not 'camelCase'`);
    if (name.includes(":")) problems.push(`${name}: metric names should not contain ':'`);
    if (/_(counter|gauge|histogram|summary|untyped)(_|$)/.test(name)) problems.push(`${name}: metric name should not include type '${/_(counter|gauge|histogram|summary|untyped)(_|$)/.exec(name)![1]}'`);
    const unit = /_(s|ms|us|ns|sec|b|kb|mb|gb|tb|pb|m|h|d)(_|$)/.exec(name);
    if (unit) problems.push(`${name}: metric names should use base units ('_${unit[1]}' is an abbreviation)`);
  }
  for (const [key, histogram] of histograms) {
    const { buckets } = histogram;
    if (buckets.length === 0 || buckets.at(-1)!.le !== Infinity) problems.push(`${key}: histogram has no "+Inf" bucket last`);
    for (let i = 1; i < buckets.length; i += 1) {
      if (!(buckets[i]!.le > buckets[i - 1]!.le)) problems.push(`${key}: histogram buckets' "le" are not in ascending order`);
      if (buckets[i]!.value < buckets[i - 1]!.value) problems.push(`${key}: histogram bucket counts fall`);
    }
    if (histogram.count === undefined) problems.push(`${key}: histogram without _count`);
    else if (buckets.length > 0 && buckets.at(-1)!.le === Infinity && buckets.at(-1)!.value !== histogram.count) problems.push(`${key}: histogram's _count differs from its "+Inf" bucket`);
    if (!histogram.sum) problems.push(`${key}: histogram without _sum`);
  }
  return problems.length ? { code: 3, output: [...new Set(problems)].map((p) => `${p}\n`).join("") } : { code: 0, output: "" };
}

/** The TYPE'd family a sample belongs to: its own name, or a histogram's or summary's with its suffix cut. */
function familyOf(name: string, types: ReadonlyMap<string, string>): string | undefined {
  if (types.has(name)) return name;
  const base = /^(.*)_(bucket|count|sum)$/.exec(name)?.[1];
  if (base !== undefined && (types.get(base) === "histogram" || (types.get(base) === "summary" && !name.endsWith("_bucket")))) return base;
  return undefined;
}

export async function scrape(adminUrl: string): Promise<string> {
  const response = await fetch(`${adminUrl}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}
