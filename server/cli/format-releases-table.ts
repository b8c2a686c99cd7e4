import type { ReleasesResponse } from "../../shared/types.js";

const NONE = "-";

/** The aggregate as an aligned plain-text table, with a footer saying how fresh and how complete it is. */
export function formatReleasesTable(answer: ReleasesResponse): string {
  const header = ["REPOSITORY", "TAG", "PUBLISHED", "MARKS"];
  const rows = answer.repos.map((entry) => {
    const latest = entry.latest;
    if (!latest) return [entry.repo, NONE, NONE, "no release"];
    const marks = [latest.draft ? "draft" : "", latest.prerelease ? "prerelease" : ""].filter(Boolean).join(", ");
    return [entry.repo, latest.tag, latest.published_at ?? "(unpublished)", marks];
  });
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ").trimEnd();
  const footer = [
    `${answer.repos.length} ${answer.repos.length === 1 ? "repository" : "repositories"}; generated at ${answer.generated_at}${answer.cached ? " (from the broker's cache)" : ""}.`,
  ];
  if (answer.stale) footer.push(`Stale (${answer.age_seconds ?? "?"} s old): the broker is refreshing it or waiting out the platform's rate limit.`);
  if (answer.truncated) footer.push("Incomplete: the broker reached a traversal cap or could not read an installation (see its log).");
  return [line(header), ...rows.map(line), "", ...footer].join("\n") + "\n";
}
