// The optional `repositories` of a POST /token body (docs/policies.md, "Other
// repositories"): other repositories of the caller's owner the one token should also cover, each of
// which must consent in its own trust policy. Names only (the platform's mint takes names), or
// `owner/name` with the caller's own owner. The broker parses the body's array here; the action
// splits its `repositories` input (comma- or newline-separated, as actions/create-github-app-token
// spells it) and checks each name the same way.

/** The most other repositories one request may name (each costs a consent check). */
export const MAX_OTHER_REPOSITORIES = 20;

// The platform's repository names: ASCII letters, digits, `.`, `-`, `_`, at most 100 characters;
// `.` and `..` are not names.
const NAME = /^[A-Za-z0-9._-]{1,100}$/;

export type RepositoryNamesParse =
  /** `names`: the other repositories, as given (owner prefix dropped), the caller's own left out. */
  | { ok: true; names: string[] }
  | { ok: false; problem: string };

const quoted = (text: string) => JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);

/** One entry: a repository name, or `owner/name` with the caller's owner (case-insensitive). */
export function readRepositoryName(entry: string, owner: string): { ok: true; name: string } | { ok: false; problem: string } {
  const text = entry.trim();
  const slash = text.indexOf("/");
  const name = slash === -1 ? text : text.slice(slash + 1);
  if (slash !== -1 && text.slice(0, slash).toLowerCase() !== owner.toLowerCase()) {
    return { ok: false, problem: `repository ${quoted(text)} is not of the owner ${owner} (a token covers repositories of one owner)` };
  }
  if (!NAME.test(name) || name === "." || name === "..") return { ok: false, problem: `repository ${quoted(text)} is not a repository name (letters, digits, ., - and _)` };
  return { ok: true, name };
}

/**
 * A JSON array of 1 to MAX_OTHER_REPOSITORIES distinct repository names (compared
 * case-insensitively, as the platform does), each a name or `owner/name` of the caller's owner.
 * The caller's own repository may be listed (as create-github-app-token users write it) and is
 * left out of `names`. Anything else is a problem naming the first entry at fault.
 */
export function parseRepositoryNames(value: unknown, caller: { owner: string; repo: string }): RepositoryNamesParse {
  if (!Array.isArray(value)) return { ok: false, problem: "repositories is not a JSON array of repository names" };
  if (value.length === 0) return { ok: false, problem: "repositories names no repository" };
  if (value.length > MAX_OTHER_REPOSITORIES) return { ok: false, problem: `repositories names more than ${MAX_OTHER_REPOSITORIES} repositories` };
  const seen = new Set<string>();
  const names: string[] = [];
  for (const entry of value) {
    if (typeof entry !== "string") return { ok: false, problem: "repositories has an entry that is not a string" };
    const read = readRepositoryName(entry, caller.owner);
    if (!read.ok) return read;
    const key = read.name.toLowerCase();
    if (seen.has(key)) return { ok: false, problem: `repository ${quoted(read.name)} is named twice` };
    seen.add(key);
    if (key !== caller.repo.toLowerCase()) names.push(read.name);
  }
  return { ok: true, names };
}
