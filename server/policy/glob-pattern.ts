// A policy glob read into tokens, with GitHub's filter-pattern meaning
// (https://docs.github.com/actions/reference/workflows-and-actions/workflow-syntax#filter-pattern-cheat-sheet),
// or the one-line reason it is refused. What GitHub leaves undocumented is refused rather than
// guessed (docs/policies.md#patterns): a quantifier with nothing single before it, a class holding
// anything but letters and digits, a leading `!` (GitHub's negation, which a policy has no use for).

/** Longer patterns are refused: the matcher's work is pattern length × claim length (the schema's maxLength too). */
export const MAX_GLOB_LENGTH = 512;

/** How many of an atom: exactly one, `?` zero or one, `+` one or more. */
export type GlobRepeat = "once" | "optional" | "some";

export type GlobToken =
  /** One character (a code point), compared exactly or, case-insensitively, with A–Z folded to a–z. */
  | { kind: "literal"; char: string; repeat: GlobRepeat }
  /** `[…]`: one character among letters, digits and ranges (`[0-9a-z]`), as inclusive code-point pairs. */
  | { kind: "class"; ranges: ReadonlyArray<readonly [number, number]>; repeat: GlobRepeat }
  /** `*`: zero or more characters, none of them `/`. */
  | { kind: "star" }
  /** `**`: zero or more of any character. */
  | { kind: "globstar" }
  // `**` then `/`: nothing, or zero or more of any character then a `/` (so GitHub's example
  // pattern "**/README.md" matches `README.md`).
  | { kind: "globstar-slash" };

type GlobParse = { ok: true; tokens: GlobToken[] } | { ok: false; problem: string };

/** Why a pattern is refused, or undefined when it compiles. */
export function globProblem(pattern: string): string | undefined {
  const parsed = parseGlob(pattern);
  return parsed.ok ? undefined : parsed.problem;
}

export function parseGlob(pattern: string): GlobParse {
  const chars = Array.from(pattern);
  const refuse = (problem: string): GlobParse => ({ ok: false, problem });
  if (chars.length === 0) return refuse("it is empty");
  if (chars.length > MAX_GLOB_LENGTH) return refuse(`it is longer than ${MAX_GLOB_LENGTH} characters`);
  if (chars[0] === "!") return refuse("a leading ! (GitHub's negation) is not supported; write \\! for a literal !");
  const tokens: GlobToken[] = [];
  let at = 0;
  while (at < chars.length) {
    const char = chars[at]!;
    if (char === "*") {
      if (chars[at + 1] !== "*") {
        tokens.push({ kind: "star" });
        at += 1;
      } else if (chars[at + 2] === "/") {
        tokens.push({ kind: "globstar-slash" });
        at += 3;
      } else {
        tokens.push({ kind: "globstar" });
        at += 2;
      }
    } else if (char === "?" || char === "+") {
      const last = tokens.at(-1);
      if (!last || last.kind === "star" || last.kind === "globstar" || last.kind === "globstar-slash" || last.repeat !== "once") {
        return refuse(`${char} at character ${at + 1} follows no single character or [class] (${char} repeats the one before it)`);
      }
      last.repeat = char === "?" ? "optional" : "some";
      at += 1;
    } else if (char === "\\") {
      const next = chars[at + 1];
      if (next === undefined) return refuse("it ends with a lone \\ (\\ escapes the character after it)");
      tokens.push({ kind: "literal", char: next, repeat: "once" });
      at += 2;
    } else if (char === "[") {
      const close = chars.indexOf("]", at + 1);
      if (close === -1) return refuse(`the [ at character ${at + 1} has no ]`);
      const ranges = classRanges(chars.slice(at + 1, close));
      if (typeof ranges === "string") return refuse(`[${chars.slice(at + 1, close).join("")}] at character ${at + 1}: ${ranges}`);
      tokens.push({ kind: "class", ranges, repeat: "once" });
      at = close + 1;
    } else {
      tokens.push({ kind: "literal", char, repeat: "once" });
      at += 1;
    }
  }
  return { ok: true, tokens };
}

const KINDS = [/^[a-z]$/, /^[A-Z]$/, /^[0-9]$/];
const kindOf = (char: string | undefined) => (char === undefined ? -1 : KINDS.findIndex((kind) => kind.test(char)));

/** The inside of `[…]`: letters, digits and ranges within a-z, A-Z or 0-9 (GitHub's cheat sheet), else why not. */
function classRanges(inside: string[]): Array<[number, number]> | string {
  if (inside.length === 0) return "an empty class";
  if (inside[0] === "!" || inside[0] === "^") return "negated classes are not supported";
  const ranges: Array<[number, number]> = [];
  for (let at = 0; at < inside.length; ) {
    const from = inside[at]!;
    if (kindOf(from) === -1) return `${from} is not a letter or a digit (a class holds only those and ranges of them)`;
    if (inside[at + 1] !== "-") {
      ranges.push([from.codePointAt(0)!, from.codePointAt(0)!]);
      at += 1;
      continue;
    }
    const to = inside[at + 2];
    if (kindOf(to) !== kindOf(from) || to! < from) return `${from}-${to ?? ""} is not a range within a-z, A-Z or 0-9`;
    ranges.push([from.codePointAt(0)!, to!.codePointAt(0)!]);
    at += 3;
  }
  return ranges;
}
