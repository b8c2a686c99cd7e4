// ALLOWED_REPOSITORIES / SIGN_ALLOWED_REPOSITORIES (docs/settings.md): exact `owner/name` entries,
// compared as strings after trimming, as the API contract says. Nothing is a pattern: `octo-org/*`,
// `octo-org/api-*` or `*` match nothing (the contract's words), and because such an entry was
// surely meant as a glob, it is a settings problem (a start-up error line; `doctor` fails on it)
// rather than a silent refusal of every token.

export interface Allowlist {
  /** Exact `owner/name` entries, as written (trimmed). */
  repositories: ReadonlySet<string>;
  /** Entries that are not `owner/name`, as written: they match nothing. */
  invalid: string[];
}

// The platform's account names (letters, digits, hyphens) and repository names (letters, digits,
// `.`, `-`, `_`).
const ENTRY = /^[A-Za-z0-9][A-Za-z0-9-]{0,38}\/([A-Za-z0-9._-]{1,100})$/;

/** Comma-separated entries, trimmed, empty ones dropped. Unset or blank → null (every repository). */
export function parseAllowlist(raw: string | undefined): Allowlist | null {
  if (raw === undefined || raw.trim() === "") return null;
  const repositories = new Set<string>();
  const invalid: string[] = [];
  for (const entry of raw.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const name = ENTRY.exec(entry)?.[1];
    if (name === undefined || name === "." || name === "..") invalid.push(entry);
    else repositories.add(entry);
  }
  return { repositories, invalid };
}

/** Whether `owner/name` is in the list: exact string equality. */
export function allowlistHas(list: Allowlist, repository: string): boolean {
  return list.repositories.has(repository);
}
