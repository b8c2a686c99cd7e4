// Text that came from the broker (or from whatever answers at broker-url) is shown only through
// these two functions. The runner reads every stdout line that starts with `::` as a workflow
// command (`::error::`, `::add-mask::`, `::stop-commands::`, ...), so a line break inside an echoed
// value would let the answer write commands of its own; bidi overrides could make a line read
// differently than it is. Nothing of this kind survives here: it is written out as an escape.
// https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/workflow-commands-for-github-actions

import { redactUrlCredentials } from "../shared/redact-url.js";

// C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidi controls.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;

const escape = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** A broker value as the log shows it: quoted, one line, escaped, at most `max` characters of it. */
export function shown(value: unknown, max = 80): string {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return `"${cut.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(UNSAFE, escape)}"`;
}

/**
 * One log line the action writes, made safe whatever went into it: no control character, no line
 * break, never a leading `::` (the last guard for text this file's callers forgot to quote), and no
 * URL's user or password (the last guard for an address printed without redactUrl).
 */
export function oneLine(message: string): string {
  const line = redactUrlCredentials(message).replace(UNSAFE, escape);
  return line.startsWith("::") ? `tokensmith: ${line}` : line;
}
