// Reading the Prometheus text exposition in tests: one sample's value by name and labels.
import { execFile } from "node:child_process";

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

/** `promtool check metrics` on the exposition (Debian's prometheus package; .ci/run installs it). */
export function promtoolCheck(text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile("promtool", ["check", "metrics"], { timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
    child.stdin!.end(text);
  });
}

export async function scrape(adminUrl: string): Promise<string> {
  const response = await fetch(`${adminUrl}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}
