// GitHub's filter-pattern globs (docs/policies.md#patterns), matched without a RegExp: a policy's
// text is untrusted, and a backtracking engine spends seconds on `**a**a**a…` or `(a+)+b`
// (docs/security.md#hostile-patterns-redos). The pattern becomes a small NFA whose states are
// walked all at once, one claim character at a time: the work is at most (states × characters),
// states being at most twice the pattern's length, whatever the pattern.
import { parseGlob, type GlobToken } from "./glob-pattern.js";

export { globProblem } from "./glob-pattern.js";

export type GlobTest = (value: string) => boolean;

/**
 * The NFA, flat (a walk visits states × characters of them, so no closures or objects per step):
 * state i consumes a character matching its edge e (0 or 1; `kind[2i+e]`, `arg[2i+e]`) into state
 * `to[2i+e]`, and reaches state `skip[i]` (-1: none) without consuming, always a later state, so
 * one forward pass closes a set. The accepting state is the one after the last.
 */
interface Automaton {
  readonly kind: Uint8Array;
  readonly arg: Int32Array;
  readonly to: Int32Array;
  readonly skip: Int32Array;
  readonly classes: ReadonlyArray<ReadonlyArray<readonly [number, number]>>;
  readonly caseInsensitive: boolean;
}
/** What an edge consumes (`arg`: the code point of a literal, the index of a class). */
const Edge = { None: 0, Any: 1, NotSlash: 2, Slash: 3, Literal: 4, Class: 5 } as const;
const SLASH_CODE = 0x2f;

/** A compiled glob; throws (an Error naming the pattern and why) when the pattern is refused. */
export function compileGlob(pattern: string, options: { caseInsensitive: boolean }): GlobTest {
  const parsed = parseGlob(pattern);
  if (!parsed.ok) throw new Error(`pattern ${JSON.stringify(pattern)} is not a valid glob: ${parsed.problem}`);
  const nfa = buildAutomaton(parsed.tokens, options.caseInsensitive);
  // An empty value (a claim present but "") matches nothing, not even `**`: an empty claim is as
  // good as an absent one (docs/policies.md#patterns).
  return (value) => value !== "" && walk(nfa, value);
}

/** Any of several globs. */
export function compileGlobs(patterns: readonly string[], options: { caseInsensitive: boolean }): GlobTest {
  const tests = patterns.map((pattern) => compileGlob(pattern, options));
  return (value) => tests.some((test) => test(value));
}

/** Case-insensitive means ASCII letters only (owner and repository names are ASCII). */
const fold = (code: number) => (code >= 0x41 && code <= 0x5a ? code + 0x20 : code);
const otherCase = (code: number) => (code >= 0x41 && code <= 0x5a ? code + 0x20 : code >= 0x61 && code <= 0x7a ? code - 0x20 : code);

/** Thompson's construction over the token list. */
function buildAutomaton(tokens: readonly GlobToken[], caseInsensitive: boolean): Automaton {
  const kinds: number[] = [];
  const args: number[] = [];
  const tos: number[] = [];
  const skips: number[] = [];
  const classes: Array<ReadonlyArray<readonly [number, number]>> = [];
  const add = (edges: Array<[kind: number, arg: number, to: number]>, skip = -1) => {
    for (const e of [0, 1]) {
      const [kind, arg, to] = edges[e] ?? [Edge.None, 0, -1];
      kinds.push(kind);
      args.push(arg);
      tos.push(to);
    }
    skips.push(skip);
  };
  for (const token of tokens) {
    const self = skips.length;
    switch (token.kind) {
      case "star":
      case "globstar":
        add([[token.kind === "star" ? Edge.NotSlash : Edge.Any, 0, self]], self + 1);
        break;
      case "globstar-slash":
        // entry: skip it all, or go on; loop: any character, until a `/` leaves.
        add([[Edge.Slash, 0, self + 2], [Edge.Any, 0, self + 1]], self + 2);
        add([[Edge.Slash, 0, self + 2], [Edge.Any, 0, self + 1]]);
        break;
      default: {
        let edge: [number, number, number];
        if (token.kind === "literal") {
          const code = token.char.codePointAt(0)!;
          edge = [Edge.Literal, caseInsensitive ? fold(code) : code, self + 1];
        } else {
          edge = [Edge.Class, classes.length, self + 1];
          classes.push(token.ranges);
        }
        if (token.repeat === "once") add([edge]);
        else if (token.repeat === "optional") add([edge], self + 1);
        else {
          // `x+` is `x` then `x*`.
          add([edge]);
          add([[edge[0], edge[1], self + 1]], self + 2);
        }
      }
    }
  }
  return { kind: Uint8Array.from(kinds), arg: Int32Array.from(args), to: Int32Array.from(tos), skip: Int32Array.from(skips), classes, caseInsensitive };
}

function consumes(nfa: Automaton, edge: number, code: number): boolean {
  switch (nfa.kind[edge]) {
    case Edge.Any:
      return true;
    case Edge.NotSlash:
      return code !== SLASH_CODE;
    case Edge.Slash:
      return code === SLASH_CODE;
    case Edge.Literal:
      return (nfa.caseInsensitive ? fold(code) : code) === nfa.arg[edge];
    case Edge.Class: {
      const ranges = nfa.classes[nfa.arg[edge]!]!;
      const within = (c: number) => ranges.some(([from, to]) => c >= from && c <= to);
      return within(code) || (nfa.caseInsensitive && within(otherCase(code)));
    }
    default:
      return false;
  }
}

/**
 * Every state the value can reach, character by character; true when the accepting one is reached
 * at the end. One forward pass per character both closes the set (a skip always goes to a later
 * state, so it is followed before that state is visited) and moves it over the character.
 */
function walk(nfa: Automaton, value: string): boolean {
  const { kind, to, skip } = nfa;
  const accept = skip.length;
  let current = new Uint8Array(accept + 1);
  let next = new Uint8Array(accept + 1);
  current[0] = 1;
  for (const char of value) {
    const code = char.codePointAt(0)!;
    let any = false;
    for (let state = 0; state < accept; state += 1) {
      if (current[state] === 0) continue;
      current[state] = 0;
      if (skip[state]! >= 0) current[skip[state]!] = 1;
      const edge = 2 * state;
      if (consumes(nfa, edge, code)) {
        next[to[edge]!] = 1;
        any = true;
      }
      if (kind[edge + 1] !== Edge.None && consumes(nfa, edge + 1, code)) {
        next[to[edge + 1]!] = 1;
        any = true;
      }
    }
    if (!any) return false;
    current[accept] = 0;
    [current, next] = [next, current];
  }
  for (let state = 0; state < accept; state += 1) {
    if (current[state] === 1 && skip[state]! >= 0) current[skip[state]!] = 1;
  }
  return current[accept] === 1;
}
