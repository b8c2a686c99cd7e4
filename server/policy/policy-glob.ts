// GitHub's filter-pattern globs (https://docs.github.com/actions/reference/workflows-and-actions/workflow-syntax#filter-pattern-cheat-sheet):
// `*` matches anything but `/`, `**` matches anything, `?` one character, `[…]` a class. picomatch
// gives `*`, `?` and classes; its `**` is a globstar only as a whole path segment (`rel**` would
// stop at `/`), so the pattern is cut at each `**` and the pieces joined by `.*`. Anchored.
import picomatch from "picomatch";

// picomatch's typings give parse() only `maxLength`; at run time it takes every matching option.
const PIECE_OPTIONS = { dot: true, noextglob: true, nonegate: true, nobrace: true, strictSlashes: true } as { maxLength?: number };

export type GlobTest = (value: string) => boolean;

/** A compiled glob; throws (an Error naming the pattern) when it does not make a regular expression. */
export function compileGlob(pattern: string, options: { caseInsensitive: boolean }): GlobTest {
  const source = pattern
    .split("**")
    .map((piece) => (piece === "" ? "" : picomatch.parse(piece, PIECE_OPTIONS).output))
    .join(".*");
  let regex: RegExp;
  try {
    regex = new RegExp(`^(?:${source})$`, options.caseInsensitive ? "is" : "s");
  } catch {
    throw new Error(`pattern ${JSON.stringify(pattern)} is not a valid glob`);
  }
  return (value) => regex.test(value);
}

/** Any of several globs. */
export function compileGlobs(patterns: readonly string[], options: { caseInsensitive: boolean }): GlobTest {
  const tests = patterns.map((pattern) => compileGlob(pattern, options));
  return (value) => tests.some((test) => test(value));
}
