// A policy file's text → a YAML Document, in bounded time. The `yaml` package costs a few
// microseconds per token and more in places (its `uniqueKeys` check is quadratic in a mapping's
// keys, each alias walks the whole document), so a 64 KiB file shaped to hurt held the event loop
// for seconds. Here the lexer and the CST parser are driven one token at a time and stopped at the
// first cap crossed (tokens, nesting, aliases, anchors, documents), before anything is composed; tags,
// directives and merge keys are refused (plain YAML is all a policy needs, and a YAML 1.1 `<<` or
// `!!set` would otherwise read silently as a plain key or value). Then the Document is composed
// from the CST already built, and duplicate keys are found with a Set per mapping.
// Figures and the worst files tried: docs/policies.md#limits; the threat: docs/security.md.
import { Composer, CST, isScalar, Lexer, LineCounter, Parser, Scalar, visit, type Document } from "yaml";

/** Lexer tokens (scalars, indicators, spaces, comments, line breaks): 100 rules written as the docs do are ~6,800. */
export const MAX_POLICY_YAML_TOKENS = 8_000;
/** The CST parser's stack (document, collections, the scalar being read): a policy needs 8. */
export const MAX_POLICY_YAML_DEPTH = 12;
/** YAML aliases (`*name`) and anchors (`&name`) each: a few are handy, a billion laughs is not. */
export const MAX_POLICY_ALIASES = 20;

type PolicyYaml =
  | { ok: true; doc: Document.Parsed; data: unknown; lineAt(offset: number | undefined): number | undefined }
  | { ok: false; line?: number; what: string };

export function parsePolicyYaml(text: string): PolicyYaml {
  const lines = new LineCounter();
  const lineAt = (offset: number | undefined) => (offset === undefined ? undefined : lines.linePos(offset).line);
  const parser = new Parser(lines.addNewLine);
  lines.addNewLine(0);
  const tokens: CST.Token[] = [];
  const fail = (what: string): PolicyYaml => ({ ok: false, line: lineAt(parser.offset), what });
  let count = 0;
  let aliases = 0;
  let anchors = 0;
  let starts = 0;
  let ends = 0;
  let scalarSource = false;
  for (const lexeme of new Lexer().lex(text)) {
    // After the scalar mark comes the scalar's own text, whatever it starts with.
    const type: string | null = scalarSource ? "scalar-source" : lexeme === CST.SCALAR ? "scalar" : CST.tokenType(lexeme);
    scalarSource = type === "scalar";
    if (++count > MAX_POLICY_YAML_TOKENS) return fail(`more than ${MAX_POLICY_YAML_TOKENS} YAML tokens (docs/policies.md#limits)`);
    if (type === "alias" && ++aliases > MAX_POLICY_ALIASES) return fail(`more than ${MAX_POLICY_ALIASES} YAML aliases`);
    if (type === "anchor" && ++anchors > MAX_POLICY_ALIASES) return fail(`more than ${MAX_POLICY_ALIASES} YAML anchors`);
    if (type === "tag") return fail(`YAML tag ${lexeme} is not supported (a policy is plain YAML: no !tags, !!binary, !!set or !!omap)`);
    if (type === "directive-line") return fail(`YAML directive ${lexeme.split(/\s/)[0]} is not supported`);
    // A second `---` or `...` starts another document: refused here, not after lexing thousands.
    if ((type === "doc-start" && ++starts > 1) || (type === "doc-end" && ++ends > 1)) return fail("not valid YAML (multiple docs)");
    for (const token of parser.next(lexeme)) tokens.push(token);
    if (parser.stack.length > MAX_POLICY_YAML_DEPTH) return fail(`YAML nesting deeper than ${MAX_POLICY_YAML_DEPTH} (a policy needs 8)`);
  }
  for (const token of parser.end()) tokens.push(token);

  const composer = new Composer({ prettyErrors: false, uniqueKeys: false, strict: true });
  const docs: Document.Parsed[] = [];
  // yaml makes every problem an Error, whose stack trace costs more than the rest of its work: a
  // file of thousands of broken lines took 70 ms of CPU. Only the first problem is reported, so the
  // stacks are not captured (synchronous: nothing else runs before the limit is put back).
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    for (const composed of composer.compose(tokens, true, text.length)) {
      docs.push(composed);
      if (docs.length > 1) break; // a second document is an error already: compose no more of them
    }
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
  const doc = docs[0]!;
  const syntax = doc.errors[0] ?? (docs.length > 1 ? { pos: docs[1]!.range, code: "MULTIPLE_DOCS" } : undefined);
  if (syntax) return { ok: false, line: lineAt(syntax.pos[0]), what: `not valid YAML (${syntax.code.toLowerCase().replace(/_/g, " ")})` };
  const problem = keyProblem(doc);
  if (problem) return { ok: false, line: lineAt(problem.offset), what: problem.what };
  try {
    // yaml counts the anchored node as one of its copies; an alias of an alias multiplies.
    return { ok: true, doc, data: doc.toJS({ maxAliasCount: MAX_POLICY_ALIASES + 1 }), lineAt };
  } catch {
    return { ok: false, what: `YAML aliases expand to more than ${MAX_POLICY_ALIASES} copies` };
  }
}

/** Duplicate keys (a Set per mapping: linear), keys that are not plain strings, and merge keys. */
function keyProblem(doc: Document.Parsed): { offset: number | undefined; what: string } | undefined {
  let found: { offset: number | undefined; what: string } | undefined;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key: unknown = pair.key;
        const offset = (key as { range?: number[] } | null)?.range?.[0];
        if (!isScalar(key) || key.value === null || typeof key.value === "object") {
          found = { offset, what: "a mapping key that is not a plain value" };
          return visit.BREAK;
        }
        const name = String(key.value);
        if (name === "<<" && key.type === Scalar.PLAIN) found = { offset, what: "YAML merge keys (<<) are not supported: write the keys out" };
        else if (seen.has(name)) found = { offset, what: "not valid YAML (duplicate key)" };
        if (found) return visit.BREAK;
        seen.add(name);
      }
      return undefined;
    },
  });
  return found;
}
