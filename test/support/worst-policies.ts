// Policy files shaped to cost the YAML parser most, each as large as a pushed file may be (64 KiB),
// and, where that crosses the token cap, also the largest under it (so the whole compile runs):
// one mapping of many keys, deep nesting, aliases, anchors, long flow lists, long scalars, many
// documents, comments, odd indentation, explicit keys, tags, rules and globs, line breaks of all kinds.
import { Lexer } from "yaml";
import { MAX_POLICY_BYTES } from "../../server/policy/compile-policy.js";
import { MAX_POLICY_YAML_TOKENS } from "../../server/policy/parse-policy-yaml.js";

const RULE = "rules:\n  - name: a\n    if: {event: push}\n    permissions: {contents: read}\n";
const id = (i: number) => i.toString(36);
const times = (n: number, unit: (i: number) => string) => Array.from({ length: n }, (_, i) => unit(i)).join("");

/** Each shape, given a count of its repeating unit. */
const SHAPES: Record<string, (n: number) => string> = {
  "distinct keys, one block mapping": (n) => `${times(n, (i) => `k${id(i)}: 0\n`)}${RULE}`,
  "distinct keys, a rule's if": (n) => `rules:\n  - name: a\n    permissions: {contents: read}\n    if:\n${times(n, (i) => `      k${id(i)}: x\n`)}`,
  "distinct keys, one flow mapping": (n) => `x: {${times(n, (i) => `${id(i)},`)}}\n${RULE}`,
  "a duplicate key after many": (n) => `${times(n, (i) => `${id(i).padStart(4, "0")}: 0\n`)}0000: 1\n${RULE}`,
  "long keys": (n) => `${times(n, (i) => `${"k".repeat(60)}${id(i)}: 0\n`)}${RULE}`,
  "deep flow lists": (n) => `x: ${"[".repeat(n)}${"]".repeat(n)}\n${RULE}`,
  "deep flow mappings": (n) => `x: ${"{a: ".repeat(n)}${"}".repeat(n)}\n${RULE}`,
  "deep block mappings": (n) => `${RULE}x:\n${times(n, (i) => `${" ".repeat(i + 2)}a:\n`)}`,
  "deep compact block lists": (n) => `${RULE}x:\n  ${"- ".repeat(n)}a\n`,
  "deep explicit keys": (n) => `${"? ".repeat(n)}a\n${RULE}`,
  "many aliases": (n) => `x: &a a\ny: [${times(n, () => "*a,")}]\n${RULE}`,
  "many anchors": (n) => `x: [${times(n, (i) => `&${id(i)} a,`)}]\n${RULE}`,
  "long flow list": (n) => `x: [${times(n, () => "0,")}]\n${RULE}`,
  "long block list": (n) => `x:\n${times(n, () => "- 0\n")}${RULE}`,
  "many empty mappings in a flow list": (n) => `x: [${times(n, () => "{},")}]\n${RULE}`,
  "long plain scalar": (n) => `x: ${"a".repeat(n)}\n${RULE}`,
  "long double-quoted escapes": (n) => `x: "${"\\u00e9".repeat(n)}"\n${RULE}`,
  "long folded scalar": (n) => `x: >\n${"  a\n".repeat(n)}${RULE}`,
  "multi-line plain scalar": (n) => `x: a\n${"  a\n".repeat(n)}${RULE}`,
  "multi-line double-quoted scalar": (n) => `x: "a\n${" a\n".repeat(n)}"\n${RULE}`,
  "double-quoted line folds": (n) => `x: "${"\\\n".repeat(n)}"\n${RULE}`,
  "unterminated flow list": (n) => `${RULE}x: [${"a, ".repeat(n)}`,
  "blank lines": (n) => `${RULE}${"\n".repeat(n)}`,
  "tabs in a flow list": (n) => `x: [${"\t0,".repeat(n)}]\n${RULE}`,
  "CRLF line ends": (n) => `${RULE.replace(/\n/g, "\r\n")}${"x\r\n".repeat(n)}`,
  "many documents": (n) => `${RULE}${"---\n".repeat(n)}`,
  "many documents with content": (n) => `${RULE}${"--- 0\n".repeat(n)}`,
  "comments": (n) => `${RULE}${"#\n".repeat(n)}`,
  "odd indentation": (n) => `x:\n${times(n, (i) => `${" ".repeat(1 + (i % 7))}- ${i}\n`)}${RULE}`,
  "explicit keys": (n) => `x:\n${times(n, (i) => `  ? k${id(i)}\n`)}${RULE}`,
  "tags": (n) => `x: [${"!a 0,".repeat(n)}]\n${RULE}`,
  "many rules": (n) => `rules:\n${times(n, (i) => `- name: r${i}\n  if: {event: push}\n  permissions: {contents: read}\n`)}`,
  "many globs": (n) => `rules:\n${times(n, (i) => `- {name: r${i}, if: {event: push, ref: [${"a*b*c*d,".repeat(50)}]}, permissions: {contents: read}}\n`)}`,
  "long globs": (n) => `rules:\n${times(n, (i) => `- {name: r${i}, if: {event: push, ref: "${"*a".repeat(256)}"}, permissions: {contents: read}}\n`)}`,
  "many permissions": (n) => `rules:\n  - name: a\n    if: {event: push}\n    permissions:\n${times(n, (i) => `      p${id(i)}: read\n`)}`,
};

/** The lexer's tokens in `text`, counted up to `limit` + 1 (the generator stops there). */
export function lexerTokens(text: string, limit = Infinity): number {
  let count = 0;
  for (const _ of new Lexer().lex(text)) if (++count > limit) break;
  return count;
}

/** The largest n for which `fits(make(n))` (fits is monotone in n). */
function largest(make: (n: number) => string, fits: (text: string) => boolean): number {
  let low = 0;
  let high = 1;
  while (fits(make(high))) [low, high] = [high, high * 2];
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (fits(make(mid))) low = mid;
    else high = mid;
  }
  return low;
}

export interface WorstPolicy {
  name: string;
  text: string;
}

const inBytes = (text: string) => Buffer.byteLength(text, "utf8") <= MAX_POLICY_BYTES;

/** One shape at 64 KiB (`worstPolicy("distinct keys, one flow mapping")`: 6.5 s of compile before the caps). */
export function worstPolicy(shape: keyof typeof SHAPES): string {
  const make = SHAPES[shape]!;
  return make(largest(make, inBytes));
}

export function worstPolicies(): WorstPolicy[] {
  const out: WorstPolicy[] = [];
  for (const [name, make] of Object.entries(SHAPES)) {
    const full = make(largest(make, inBytes));
    out.push({ name: `${name} (64 KiB)`, text: full });
    const underCap = (text: string) => lexerTokens(text, MAX_POLICY_YAML_TOKENS) <= MAX_POLICY_YAML_TOKENS;
    if (!underCap(full)) out.push({ name: `${name} (at the token cap)`, text: make(largest(make, (text) => inBytes(text) && underCap(text))) });
  }
  return out;
}
