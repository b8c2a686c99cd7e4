// ALLOWED_REPOSITORIES / SIGN_ALLOWED_REPOSITORIES (docs/settings.md): exact `owner/name` entries,
// and `owner/*` for every repository of that owner. Nothing else is a pattern: `octo-org/api-*`
// or `*` would otherwise look like globs and silently match nothing, so such an entry is a
// settings problem (logged at start, `doctor` fails) and still matches nothing (fail closed).

export interface Allowlist {
  /** Exact `owner/name` entries, as written (trimmed). */
  repositories: ReadonlySet<string>;
  /** Owners of `owner/*` entries: every repository of theirs. */
  owners: ReadonlySet<string>;
  /** Entries that are neither, as written: they match nothing. */
  invalid: string[];
}

// The platform's account names (letters, digits, single hyphens) and repository names (letters,
// digits, `.`, `-`, `_`); kept loose on the account's hyphens, exact on the shape.
const OWNER = "[A-Za-z0-9][A-Za-z0-9-]{0,38}";
const ENTRY = new RegExp(`^(${OWNER})/(?:([A-Za-z0-9._-]{1,100})|\\*)$`);

/** Comma-separated entries, trimmed, empty ones dropped. Unset or blank → null (every repository). */
export function parseAllowlist(raw: string | undefined): Allowlist | null {
  if (raw === undefined || raw.trim() === "") return null;
  const repositories = new Set<string>();
  const owners = new Set<string>();
  const invalid: string[] = [];
  for (const entry of raw.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const match = ENTRY.exec(entry);
    if (!match || match[2] === "." || match[2] === "..") invalid.push(entry);
    else if (match[2] === undefined) owners.add(match[1]!);
    else repositories.add(entry);
  }
  return { repositories, owners, invalid };
}

/** Whether `owner/name` is in the list: an exact entry, or its owner's `owner/*`. */
export function allowlistHas(list: Allowlist, repository: string): boolean {
  if (list.repositories.has(repository)) return true;
  const slash = repository.indexOf("/");
  return slash > 0 && list.owners.has(repository.slice(0, slash));
}
