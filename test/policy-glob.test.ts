// Issue 36, item 1: policy globs are matched by a small NFA walk (server/policy/policy-glob.ts), not
// a RegExp built from policy text. GitHub's cheat-sheet examples as a table, what is refused and
// why, a fast-check property against a plain backtracking matcher over the same tokens, and the
// patterns that took seconds under the old RegExp decided in well under 10 ms.
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { MAX_GLOB_LENGTH, parseGlob, type GlobToken } from "../server/policy/glob-pattern.js";
import { compileGlob, compileGlobs, globProblem } from "../server/policy/policy-glob.js";

const exact = (pattern: string) => compileGlob(pattern, { caseInsensitive: false });

describe("GitHub's filter pattern cheat sheet", () => {
  // https://docs.github.com/actions/reference/workflows-and-actions/workflow-syntax#filter-pattern-cheat-sheet
  it.each([
    ["feature/*", ["feature/my-branch", "feature/your-branch"], ["feature/your/branch", "feature"]],
    ["feature/**", ["feature/beta-a/my-branch", "feature/your-branch", "feature/mona/the/octocat"], ["feature", "features/x"]],
    ["main", ["main"], ["main2", "xmain", "Main"]],
    ["releases/mona-the-octocat", ["releases/mona-the-octocat"], ["releases/mona"]],
    ["*", ["main", "releases", "README.md", "server.rb"], ["releases/v1", "a/b"]],
    ["**", ["all/the/branches", "every/tag", "main"], []],
    ["*feature", ["mona-feature", "feature", "ver-10-feature"], ["feature-x", "mona/feature"]],
    ["v2*", ["v2", "v2.0", "v2.9"], ["v1", "v2/x", "xv2"]],
    ["v[12].[0-9]+.[0-9]+", ["v1.10.1", "v2.0.0"], ["v3.0.0", "v1..1", "v1.a.1", "v1.0"]],
    ["*.jsx?", ["page.js", "page.jsx"], ["page.jsxx", "page.j", "a/page.js"]],
    ["*.js", ["app.js", "index.js"], ["js/index.js"]],
    ["**.js", ["index.js", "js/index.js", "src/js/app.js"], ["index.jsx"]],
    ["docs/*", ["docs/README.md", "docs/file.txt"], ["docs/mona/octocat.txt"]],
    ["docs/**", ["docs/README.md", "docs/mona/octocat.txt"], ["doc/x"]],
    ["docs/**/*.md", ["docs/README.md", "docs/mona/hello-world.md", "docs/a/markdown/file.md"], ["docs/a/file.txt", "README.md"]],
    ["**/docs/**", ["docs/hello.md", "dir/docs/my-file.txt", "space/docs/plan/space.doc"], ["mydocs/x", "docs"]],
    ["**/README.md", ["README.md", "js/README.md"], ["xREADME.md", "js/README.mdx"]],
    ["**/*src/**", ["a/src/app.js", "my-src/code/js/app.js"], ["src", "a/source/x"]],
    ["**/*-post.md", ["my-post.md", "path/their-post.md"], ["post.md"]],
    ["**/migrate-*.sql", ["migrate-10909.sql", "db/migrate-v1.0.sql", "db/sept/migrate-v1.sql"], ["db/migrate-/x.sql"]],
    ["[CB]at", ["Cat", "Bat"], ["cat", "Hat"]],
    ["[1-2]00", ["100", "200"], ["300", "00"]],
    ["Octo*", ["Octocat"], ["octocat"]],
  ])("%s", (pattern, matches, misses) => {
    const test = exact(pattern);
    for (const value of matches) expect([value, test(value)]).toEqual([value, true]);
    for (const value of misses) expect([value, test(value)]).toEqual([value, false]);
  });
});

describe("the rest of the meaning", () => {
  it.each([
    // Every other character is itself: nothing of a regular expression survives.
    ["refs/heads/(a+)+b", "refs/heads/(aaa)+b", false],
    ["refs/heads/(a+)+b", "refs/heads/(aaa))b", true],
    ["a|b", "a", false],
    ["a|b", "a|b", true],
    ["v{2}", "v{2}", true],
    ["v{2}", "vv", false],
    ["a.b", "axb", false],
    ["$x^", "$x^", true],
    ["x]", "x]", true],
    ["a!", "a!", true],
    // `\` makes the next character plain, and an escaped character can be repeated.
    ["\\*", "*", true],
    ["\\*", "a", false],
    ["\\!x", "!x", true],
    ["a\\\\b", "a\\b", true],
    ["\\[a]", "[a]", true],
    ["x\\++", "x+++", true],
    // `?` and `+` repeat the one character or class before them.
    ["ab?c", "ac", true],
    ["ab?c", "abbc", false],
    ["ab+c", "ac", false],
    ["ab+c", "abbbc", true],
    ["[ab]+", "abba", true],
    ["/?x", "x", true],
    // `**/` may also match nothing; a lone `**` anywhere is any run at all.
    ["a/**/b", "a/b", true],
    ["a/**/b", "a/x/y/b", true],
    ["a**/b", "ab", true],
    ["refs/heads/rel**", "refs/heads/rel/2/x", true],
    ["**a", "b/a", true],
    ["*a", "b/a", false],
  ])("%s against %s → %s", (pattern, value, expected) => {
    expect(exact(pattern)(value)).toBe(expected);
  });

  it("an empty value matches nothing, not even **", () => {
    expect(exact("**")("")).toBe(false);
    expect(exact("*")("")).toBe(false);
    expect(exact("a?")("")).toBe(false);
    expect(exact("a?")("a")).toBe(true);
  });

  it("case-insensitively, ASCII letters fold (literals and classes); other characters stay exact", () => {
    const folded = (pattern: string) => compileGlob(pattern, { caseInsensitive: true });
    expect(folded("Octo-Org/*")("octo-org/app")).toBe(true);
    expect(folded("octo-org/[A-C]pp")("OCTO-ORG/bPP")).toBe(true);
    expect(folded("é")("É")).toBe(false);
    expect(exact("Octo-Org/*")("octo-org/app")).toBe(false);
    expect(exact("[A-C]pp")("bpp")).toBe(false);
  });

  it("a character is a code point: ? repeats a whole emoji", () => {
    expect(exact("v🎉?")("v")).toBe(true);
    expect(exact("v🎉?")("v🎉")).toBe(true);
    expect(exact("[a]")("🎉")).toBe(false);
  });

  it("compileGlobs: any of the list", () => {
    const test = compileGlobs(["refs/heads/main", "refs/tags/v*"], { caseInsensitive: false });
    expect([test("refs/heads/main"), test("refs/tags/v1"), test("refs/heads/dev")]).toEqual([true, true, false]);
  });
});

describe("refused patterns (the policy is then policy_invalid)", () => {
  it.each([
    ["", "it is empty"],
    ["x".repeat(MAX_GLOB_LENGTH + 1), `it is longer than ${MAX_GLOB_LENGTH} characters`],
    ["!refs/heads/main", "a leading ! (GitHub's negation) is not supported; write \\! for a literal !"],
    ["?x", "? at character 1 follows no single character or [class] (? repeats the one before it)"],
    ["+", "+ at character 1 follows no single character or [class] (+ repeats the one before it)"],
    ["a*+", "+ at character 3 follows no single character or [class] (+ repeats the one before it)"],
    ["a**?", "? at character 4 follows no single character or [class] (? repeats the one before it)"],
    ["a/**/?", "? at character 6 follows no single character or [class] (? repeats the one before it)"],
    ["a+?", "? at character 3 follows no single character or [class] (? repeats the one before it)"],
    ["a??", "? at character 3 follows no single character or [class] (? repeats the one before it)"],
    ["x\\", "it ends with a lone \\ (\\ escapes the character after it)"],
    ["v[0-9", "the [ at character 2 has no ]"],
    ["v[]", "[] at character 2: an empty class"],
    ["[!a]", "[!a] at character 1: negated classes are not supported"],
    ["[^a]", "[^a] at character 1: negated classes are not supported"],
    ["[a.]", "[a.] at character 1: . is not a letter or a digit (a class holds only those and ranges of them)"],
    ["[/]", "[/] at character 1: / is not a letter or a digit (a class holds only those and ranges of them)"],
    ["[a-Z]", "[a-Z] at character 1: a-Z is not a range within a-z, A-Z or 0-9"],
    ["[A-z]", "[A-z] at character 1: A-z is not a range within a-z, A-Z or 0-9"],
    ["[9-0]", "[9-0] at character 1: 9-0 is not a range within a-z, A-Z or 0-9"],
    ["[a-]", "[a-] at character 1: a- is not a range within a-z, A-Z or 0-9"],
    ["[-a]", "[-a] at character 1: - is not a letter or a digit (a class holds only those and ranges of them)"],
  ])("%j: %s", (pattern, problem) => {
    expect(globProblem(pattern)).toBe(problem);
    expect(() => exact(pattern)).toThrow(`pattern ${JSON.stringify(pattern)} is not a valid glob: ${problem}`);
  });

  it("the longest pattern allowed compiles; length counts characters, not UTF-16 units", () => {
    expect(globProblem("x".repeat(MAX_GLOB_LENGTH))).toBeUndefined();
    expect(globProblem("🎉".repeat(MAX_GLOB_LENGTH))).toBeUndefined();
  });
});

// The reference: a plain recursive backtracking matcher over the same tokens, obviously right and
// fine for the short strings here (it is exponential on the patterns below, which is the point).
const asciiCases = (char: string) => (/^[A-Za-z]$/.test(char) ? [char.toLowerCase(), char.toUpperCase()] : [char]);
function atomMatches(token: Extract<GlobToken, { kind: "literal" | "class" }>, char: string, caseInsensitive: boolean): boolean {
  const spellings = caseInsensitive ? asciiCases(char) : [char];
  if (token.kind === "literal") return spellings.includes(token.char);
  return spellings.some((c) => token.ranges.some(([low, high]) => c.codePointAt(0)! >= low && c.codePointAt(0)! <= high));
}
function referenceMatch(tokens: readonly GlobToken[], value: string, caseInsensitive: boolean): boolean {
  const chars = Array.from(value);
  const from = (t: number, i: number): boolean => {
    const token = tokens[t];
    if (token === undefined) return i === chars.length;
    if (token.kind === "star") {
      for (let j = i; j <= chars.length; j++) {
        if (from(t + 1, j)) return true;
        if (chars[j] === "/") return false;
      }
      return false;
    }
    if (token.kind === "globstar") {
      for (let j = i; j <= chars.length; j++) if (from(t + 1, j)) return true;
      return false;
    }
    if (token.kind === "globstar-slash") {
      if (from(t + 1, i)) return true;
      for (let j = i; j < chars.length; j++) if (chars[j] === "/" && from(t + 1, j + 1)) return true;
      return false;
    }
    const ok = (j: number) => j < chars.length && atomMatches(token, chars[j]!, caseInsensitive);
    if (token.repeat === "once") return ok(i) && from(t + 1, i + 1);
    if (token.repeat === "optional") return from(t + 1, i) || (ok(i) && from(t + 1, i + 1));
    for (let j = i; ok(j); j++) if (from(t + 1, j + 1)) return true;
    return false;
  };
  return chars.length > 0 && from(0, 0);
}

describe("the NFA walk agrees with a backtracking matcher (fast-check)", () => {
  const ALPHABET = ["/", "*", "?", "+", "[", "]", "\\", "a", "b", "A", "|", "("];
  // Pieces beside single characters so that valid classes and `**/` come up often.
  const PIECES = [...ALPHABET, "[ab]", "[a-b]", "[A]", "**/", "\\*", "\\?", "a+", "b?"];
  const patterns = fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 8 }).map((pieces) => pieces.join(""));
  const values = fc.array(fc.constantFrom(...ALPHABET, "B"), { maxLength: 10 }).map((chars) => chars.join(""));

  it("same answer for every pattern that compiles; a pattern is refused exactly when it does not parse", () => {
    let compiled = 0;
    fc.assert(
      fc.property(patterns, fc.array(values, { minLength: 1, maxLength: 6 }), fc.boolean(), (pattern, claims, caseInsensitive) => {
        const parsed = parseGlob(pattern);
        if (!parsed.ok) {
          expect(() => compileGlob(pattern, { caseInsensitive })).toThrow(parsed.problem);
          return;
        }
        compiled += 1;
        const test = compileGlob(pattern, { caseInsensitive });
        for (const claim of claims) expect([pattern, claim, test(claim)]).toEqual([pattern, claim, referenceMatch(parsed.tokens, claim, caseInsensitive)]);
      }),
      { numRuns: 2000 },
    );
    // The generator must reach the matcher, not only the refusals.
    expect(compiled).toBeGreaterThan(600);
  });

  it("a value made to match (pattern expanded at random) matches", () => {
    // Values built from the pattern itself hit the matches that random strings rarely do.
    fc.assert(
      fc.property(patterns, fc.array(fc.nat(3), { minLength: 40, maxLength: 40 }), (pattern, choices) => {
        const parsed = parseGlob(pattern);
        fc.pre(parsed.ok);
        const tokens = (parsed as { tokens: GlobToken[] }).tokens;
        let pick = 0;
        const choose = () => choices[pick++ % choices.length]!;
        const value = tokens.map((token) => expand(token, choose)).join("");
        fc.pre(value !== "");
        expect([pattern, value, exact(pattern)(value)]).toEqual([pattern, value, true]);
        expect(referenceMatch(tokens, value, false)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

/** One string the token matches, chosen by `choose` (0–3). */
function expand(token: GlobToken, choose: () => number): string {
  const filler = ["", "a", "ab", "b/a"];
  switch (token.kind) {
    case "star":
      return filler[choose() % 3]!;
    case "globstar":
      return filler[choose()]!;
    case "globstar-slash":
      return ["", "a/", "a/b/", "/"][choose()]!;
    default: {
      const one = () => (token.kind === "literal" ? token.char : String.fromCodePoint(token.ranges[choose() % token.ranges.length]![0]));
      const count = token.repeat === "once" ? 1 : token.repeat === "optional" ? choose() % 2 : 1 + (choose() % 3);
      return Array.from({ length: count }, one).join("");
    }
  }
}

describe("hostile patterns are decided at once (the work is states × characters)", () => {
  it("the patterns that blocked the old RegExp for seconds, against 256-character refs", () => {
    const long = (fill: string, tail: string) => `refs/heads/${fill.repeat(256)}`.slice(0, 256 - tail.length) + tail;
    const cases: Array<[string, string, boolean]> = [
      [`refs/heads/${"**a".repeat(12)}`, long("a", "-x"), false],
      [`refs/heads/${"**a".repeat(12)}`, long("a", ""), true],
      ["**a".repeat(12), long("a", "b"), false],
      ["refs/heads/(a+)+b", long("a", ""), false],
      ["refs/heads/a+a+a+a+a+a+a+a+a+a+a+a+b", long("a", ""), false],
      ["refs/heads/[a]+[a]+[a]+[a]+[a]+[a]+[a]+b", long("a", ""), false],
      ["refs/heads/*a*a*a*a*a*a*a*a*a*a*a*a*b", long("a", ""), false],
      [`${"**/".repeat(40)}b`, long("a/", "a"), false],
      ["**a".repeat(Math.floor(MAX_GLOB_LENGTH / 3)), long("a", "-"), false],
    ];
    for (const [, value] of cases) expect(value.length).toBe(256);
    const started = performance.now();
    const answers = cases.map(([pattern, value]) => exact(pattern)(value));
    const ms = performance.now() - started;
    process.stdout.write(`policy-glob: ${cases.length} hostile patterns against 256-character refs decided in ${ms.toFixed(2)} ms in all\n`);
    expect(answers).toEqual(cases.map(([, , expected]) => expected));
    expect(ms).toBeLessThan(50);
  });
});
