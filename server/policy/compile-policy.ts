// Text → CompiledPolicy, once per file version: YAML (parse-policy-yaml.ts: bounded time), the
// JSON Schema the package ships (ajv), the platform's permission catalogue, then every glob
// compiled. Every problem is one line naming the file's line (policy_invalid's detail).
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { isMap, isSeq, type Document } from "yaml";
import { checkCatalogue, type PermissionLevel } from "../../shared/token-permissions.js";
import { compileGlobs } from "./policy-glob.js";
import { CONDITION_CLAIMS, stringClaim } from "./policy-claims.js";
import { parsePolicyYaml } from "./parse-policy-yaml.js";
import { readPolicySchema } from "./policy-schema.js";
import { policyWarnings } from "./policy-warnings.js";
import type { CompiledCondition, CompiledPolicy, CompiledRule, PolicyKind } from "./policy-types.js";

/** Policy files over this are refused unread (docs/policies.md#threats-and-what-answers-them). */
export const MAX_POLICY_BYTES = 64 * 1024;

export type PolicyCompile = { ok: true; policy: CompiledPolicy } | { ok: false; detail: string };

export interface PolicyCompiler {
  /** `file` names the source in the detail (`.github/tokensmith.yml`, a local path). */
  compile(text: string, kind: PolicyKind, file: string): PolicyCompile;
}

let schemaValidator: ValidateFunction | undefined;

/**
 * The schema is compiled once per process, when the first compiler is made: ajv's validator is a
 * pure function of the schema the package ships (its `errors` are read right after each call, in
 * the same turn), and compiling it costs 70–90 ms of CPU, which every broker context paid again.
 */
export function createPolicyCompiler(): PolicyCompiler {
  const validate = (schemaValidator ??= new Ajv({ allErrors: false, strict: true }).compile(readPolicySchema()));
  return { compile: (text, kind, file) => compilePolicy(validate, text, kind, file) };
}

function compilePolicy(validate: ValidateFunction, text: string, kind: PolicyKind, file: string): PolicyCompile {
  const fail = (line: number | undefined, what: string): PolicyCompile => ({ ok: false, detail: `${file}${line ? ` line ${line}` : ""}: ${what}` });
  if (Buffer.byteLength(text, "utf8") > MAX_POLICY_BYTES) return fail(undefined, `over ${MAX_POLICY_BYTES / 1024} KiB`);
  const parsed = parsePolicyYaml(text);
  if (!parsed.ok) return fail(parsed.line, parsed.what);
  const { doc, data, lineAt } = parsed;
  if (!validate(data)) {
    const error = validate.errors![0]!;
    return fail(lineOf(doc, error.instancePath, lineAt), schemaProblem(error));
  }
  const raw = data as RawPolicy;
  if (kind === "repository" && raw.repository_policies !== undefined) return fail(lineOf(doc, "/repository_policies", lineAt), "repository_policies belongs in the owner policy (.github/tokensmith-org.yml)");
  const rules: CompiledRule[] = [];
  const names = new Set<string>();
  for (const [index, rule] of raw.rules.entries()) {
    const at = (path: string) => lineOf(doc, `/rules/${index}${path}`, lineAt);
    if (names.has(rule.name)) return fail(at("/name"), `rule name ${rule.name} is used twice`);
    names.add(rule.name);
    if (kind === "repository" && rule.repositories !== undefined) return fail(at("/repositories"), `rule ${rule.name}: repositories belongs in the owner policy (.github/tokensmith-org.yml)`);
    for (const [name, level] of Object.entries(rule.permissions)) {
      const problem = checkCatalogue(name, level);
      if (problem) return fail(at(`/permissions/${name}`), `rule ${rule.name}: ${problem}`);
    }
    let conditions: CompiledCondition[];
    let repositories: CompiledRule["repositories"];
    try {
      conditions = compileConditions(rule.if ?? {});
      if (rule.repositories) repositories = { patterns: rule.repositories, test: compileGlobs(rule.repositories, { caseInsensitive: true }) };
    } catch (error) {
      return fail(at(""), `rule ${rule.name}: ${(error as Error).message}`);
    }
    rules.push({ name: rule.name, conditions, ...(repositories ? { repositories } : {}), permissions: { ...rule.permissions }, line: at("") ?? 0 });
  }
  return { ok: true, policy: { kind, rules, ignoreRepositoryPolicies: raw.repository_policies === "ignore", warnings: policyWarnings(rules, file) } };
}

interface RawRule {
  name: string;
  if?: Record<string, string | string[]> & { claims?: Record<string, string | string[]> };
  repositories?: string[];
  permissions: Record<string, PermissionLevel>;
}
interface RawPolicy {
  repository_policies?: "apply" | "ignore";
  rules: RawRule[];
}

function compileConditions(conditions: NonNullable<RawRule["if"]>): CompiledCondition[] {
  const out: CompiledCondition[] = [];
  for (const [key, value] of Object.entries(conditions)) {
    if (key === "claims") {
      for (const [claim, globs] of Object.entries(value as Record<string, string | string[]>)) {
        const patterns = typeof globs === "string" ? [globs] : globs;
        out.push({ key: `claims.${claim}`, read: (claims) => stringClaim(claims, claim), patterns, test: compileGlobs(patterns, { caseInsensitive: false }) });
      }
      continue;
    }
    const known = CONDITION_CLAIMS[key]!;
    const patterns = typeof value === "string" ? [value] : (value as string[]);
    out.push({ key, read: known.read, patterns, test: compileGlobs(patterns, { caseInsensitive: known.caseInsensitive }) });
  }
  return out;
}

/** The line of the node at a JSON pointer (or of its nearest ancestor that has one). */
function lineOf(doc: Document, pointer: string, lineAt: (offset: number | undefined) => number | undefined): number | undefined {
  const path = pointer.split("/").slice(1).map((part) => (/^\d+$/.test(part) ? Number(part) : part.replace(/~1/g, "/").replace(/~0/g, "~")));
  for (let depth = path.length; depth >= 0; depth -= 1) {
    const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
    if (node && typeof node === "object" && "range" in node && Array.isArray((node as { range?: unknown }).range)) {
      // A map or list starts where its first entry does; a scalar where it is written.
      const start = isMap(node) || isSeq(node) ? (node.items[0] as { key?: { range?: number[] }; range?: number[] } | undefined) : undefined;
      const offset = start?.key?.range?.[0] ?? start?.range?.[0] ?? (node as { range: number[] }).range[0];
      return lineAt(offset);
    }
  }
  return undefined;
}

/** ajv's first error, as a person reads it: where, then what. */
function schemaProblem(error: ErrorObject): string {
  const where = error.instancePath === "" ? "the policy" : error.instancePath.slice(1).replace(/\//g, ".");
  switch (error.keyword) {
    case "additionalProperties":
      return `${where}: unknown key ${(error.params as { additionalProperty: string }).additionalProperty}`;
    case "required":
      return `${where}: missing ${(error.params as { missingProperty: string }).missingProperty}`;
    case "enum":
      return `${where}: must be one of ${((error.params as { allowedValues: unknown[] }).allowedValues).join(", ")}`;
    default:
      return `${where}: ${error.message ?? "is not valid"}`;
  }
}
