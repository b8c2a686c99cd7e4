// GitHub's published REST description (@octokit/openapi, api.github.com) as the simulator's judge:
// each route the simulator implements is matched to the operation (method + path template) it
// implements; a request body the description refuses is answered 422 the way GitHub words it
// ("Invalid request.\n\nFor 'properties/…', … is not a string."), before any handler runs; and
// tests check the simulator's answers against the operation's response schemas.
// https://github.com/github/rest-api-description
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { packageFile } from "./package-file.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type SchemaObject = { [key: string]: Json };

export interface OpenapiOperation {
  operationId: string;
  method: string;
  /** The description's path template, e.g. `/repos/{owner}/{repo}/pulls`. */
  path: string;
  /** The documentation page GitHub names in its error bodies. */
  documentationUrl: string;
  /** Is a JSON request body described (and so validated)? */
  hasBody: boolean;
  validateBody(body: unknown): string | undefined;
  /** Problems of an answer against the operation's response schema for that status ([] = none). */
  validateResponse(status: number, body: unknown): string[];
}

export interface Description {
  paths: Record<string, Record<string, RawOperation>>;
  components: SchemaObject;
}
interface RawOperation {
  operationId: string;
  externalDocs?: { url?: string };
  requestBody?: { content?: Record<string, { schema?: SchemaObject }> };
  responses: Record<string, RawResponse>;
}
type RawResponse = { $ref?: string; content?: Record<string, { schema?: SchemaObject }> };

const HTTP_METHODS = ["get", "put", "post", "patch", "delete"];
const BASE = "github-rest";

/** `/repos/{owner}/{repo}` and `/repos/:owner/:repo` both become `/repos/{}/{}`. */
function shape(template: string): string {
  return template.replace(/\{[^}/]+\}/g, "{}").replace(/(^|\/):[^/]+/g, "$1{}");
}

/**
 * OpenAPI 3.0 → JSON Schema for ajv: `nullable: true` becomes a `null` type (or an `anyOf` with
 * null where there is no `type`: `allOf`/`$ref`), and local `$ref`s point into the bundle of
 * components compiled with the schema (`#/components/schemas/…` inside that bundle).
 */
function convert(value: Json): Json {
  if (Array.isArray(value)) return value.map(convert);
  if (value === null || typeof value !== "object") return value;
  const out: SchemaObject = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === "properties" && inner !== null && typeof inner === "object" && !Array.isArray(inner)) {
      // Property names are data: a property called `description` or `nullable` is still a schema.
      out[key] = Object.fromEntries(Object.entries(inner).map(([name, schema]) => [name, convert(schema)]));
      continue;
    }
    if (key === "nullable") continue;
    if (key === "$ref" && typeof inner === "string" && inner.startsWith("#/components/schemas/")) out[key] = inner; // resolved in the bundle
    else if (key === "example" || key === "examples" || key === "description") out[key] = inner; // data, not schema: left as is
    else out[key] = convert(inner);
  }
  if (value.nullable !== true) return out;
  if (typeof out.type === "string") {
    out.type = [out.type, "null"];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    return out;
  }
  return { anyOf: [{ type: "null" }, out] };
}

/** Ruby's rendering of a value, as GitHub's validation messages show it (`nil`, `{"a" => 1}`). */
function rubyValue(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (Array.isArray(value)) return `[${value.map(rubyValue).join(", ")}]`;
  if (typeof value === "object") return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)} => ${rubyValue(v)}`).join(", ")}}`;
  return JSON.stringify(value);
}

const ARTICLE: Record<string, string> = { array: "an array", object: "an object", integer: "an integer", string: "a string", boolean: "a boolean", number: "a number", null: "null" };

/** One line of GitHub's "Invalid request." message for the first problem ajv found. */
function githubMessage(error: ErrorObject, body: unknown): string {
  const segments = error.instancePath.split("/").slice(1).map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
  let value: unknown = body;
  for (const segment of segments) value = (value as Record<string, unknown> | undefined)?.[segment];
  const last = segments.at(-1);
  const where = last === undefined ? "" : /^\d+$/.test(last) ? "For 'items', " : `For 'properties/${last}', `;
  switch (error.keyword) {
    case "required":
      return `"${(error.params as { missingProperty: string }).missingProperty}" wasn't supplied.`;
    case "type": {
      const types = ([] as string[]).concat((error.params as { type: string | string[] }).type).filter((t) => t !== "null");
      const nullable = ([] as string[]).concat((error.params as { type: string | string[] }).type).includes("null");
      return `${where}${rubyValue(value)} is not ${types.map((t) => ARTICLE[t] ?? t).join(" or ")}${nullable ? " or null" : ""}.`;
    }
    case "enum": // GitHub shows the refused string bare here: `bogus is not a member of ["open", "dismissed"]`
      return `${where}${typeof value === "string" ? value : rubyValue(value)} is not a member of ${JSON.stringify((error.params as { allowedValues: unknown[] }).allowedValues).replace(/,/g, ", ")}.`;
    case "additionalProperties":
      return `${where}"${(error.params as { additionalProperty: string }).additionalProperty}" is not a permitted key.`;
    default:
      return `${where}${rubyValue(value)} is not valid (${error.message ?? error.keyword}).`;
  }
}

/** Every `#/components/schemas/NAME` that `schema` reaches, directly or through other components. */
function reachableComponents(schema: Json, components: Record<string, Json>, found = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) reachableComponents(item, components, found);
  else if (schema !== null && typeof schema === "object") {
    for (const [key, inner] of Object.entries(schema)) {
      if (key === "$ref" && typeof inner === "string" && inner.startsWith("#/components/schemas/")) {
        const name = inner.slice("#/components/schemas/".length);
        if (!found.has(name) && components[name] !== undefined) {
          found.add(name);
          reachableComponents(components[name]!, components, found);
        }
      } else if (key !== "example" && key !== "examples") reachableComponents(inner, components, found);
    }
  }
  return found;
}

class OpenapiDescription {
  private readonly byShape = new Map<string, { path: string; method: string; raw: RawOperation }>();
  private readonly ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true, validateSchema: false });
  private readonly operations = new Map<string, OpenapiOperation | undefined>();
  private readonly sharedResponses: Record<string, RawResponse>;
  private readonly schemas: Record<string, Json>;
  private bundles = 0;

  private readonly undescribed: Set<string>;

  /** `undescribed`: operations known not to be in the whole description (a subset's list). */
  constructor(description: Description, undescribed: readonly string[] = []) {
    this.undescribed = new Set(undescribed);
    this.sharedResponses = (description.components.responses ?? {}) as Record<string, RawResponse>;
    this.schemas = (description.components.schemas ?? {}) as Record<string, Json>;
    for (const [path, item] of Object.entries(description.paths)) {
      for (const method of HTTP_METHODS) {
        const raw = item[method];
        if (raw) this.byShape.set(`${method.toUpperCase()} ${shape(path)}`, { path, method: method.toUpperCase(), raw });
      }
    }
  }

  /** Whether this description holds the operation of `method` and a route pattern (or template). */
  describes(method: string, routePattern: string): boolean {
    const key = `${method.toUpperCase()} ${shape(routePattern)}`;
    return this.byShape.has(key) || this.undescribed.has(key);
  }

  /** Whether this description holds the component schema `name`. */
  hasSchema(name: string): boolean {
    return this.schemas[name] !== undefined;
  }

  /** The operation a simulator route (`/repos/:owner/:repo/pulls`) implements, if GitHub describes one. */
  operation(method: string, routePattern: string): OpenapiOperation | undefined {
    const key = `${method.toUpperCase()} ${shape(routePattern)}`;
    if (this.operations.has(key)) return this.operations.get(key);
    const found = this.byShape.get(key);
    const op = found && this.build(found.method, found.path, found.raw);
    this.operations.set(key, op);
    return op;
  }

  /** Problems of `value` against a component schema (`installation`, `repository`…); [] = none. */
  validateComponent(name: string, value: unknown): string[] {
    if (this.schemas[name] === undefined) return [`no component schema ${name}`];
    const validator = this.compile({ $ref: `#/components/schemas/${name}` });
    if (validator(value)) return [];
    return (validator.errors ?? []).map((e) => `${e.instancePath || "(root)"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
  }

  /** `#/components/responses/not_found` and the like, resolved. */
  private response(described: RawResponse | undefined): RawResponse | undefined {
    const ref = described?.$ref;
    return ref?.startsWith("#/components/responses/") ? this.sharedResponses[ref.slice("#/components/responses/".length)] : described;
  }

  /**
   * Compiles one schema with only the components it reaches (converted as a bundle under an id of
   * its own): a few milliseconds, where converting all of GitHub's components would stall the
   * process for a second.
   */
  private compile(schema: SchemaObject): ValidateFunction {
    const names = reachableComponents(schema, this.schemas);
    const bundled: Record<string, Json> = {};
    for (const name of names) bundled[name] = convert(this.schemas[name]!);
    this.bundles += 1;
    return this.ajv.compile({ $id: `${BASE}-${this.bundles}`, allOf: [convert(schema)], components: { schemas: bundled } } as SchemaObject);
  }

  private build(method: string, path: string, raw: RawOperation): OpenapiOperation {
    const compile = (schema: SchemaObject | undefined): ValidateFunction | undefined => (schema ? this.compile(schema) : undefined);
    const bodySchema = raw.requestBody?.content?.["application/json"]?.schema;
    // Compiled on the first body it judges (a few milliseconds each), not when a route is added:
    // a simulator has some twenty such routes and most tests call two or three of them.
    let bodyValidator: ValidateFunction | undefined;
    const responseValidators = new Map<number, ValidateFunction | undefined>();
    const documentationUrl = raw.externalDocs?.url ?? "https://docs.github.com/rest";
    return {
      operationId: raw.operationId,
      method,
      path,
      documentationUrl,
      hasBody: bodySchema !== undefined,
      validateBody: (body) => {
        // No body at all is left to the handler (every operation the simulator implements takes an optional one).
        if (!bodySchema || body === undefined) return undefined;
        bodyValidator ??= compile(bodySchema)!;
        if (bodyValidator(body)) return undefined;
        return `Invalid request.\n\n${githubMessage(bodyValidator.errors![0]!, body)}`;
      },
      validateResponse: (status, body) => {
        const described = this.response(raw.responses[String(status)]);
        if (!described) return [`status ${status} is not described for ${raw.operationId} (described: ${Object.keys(raw.responses).join(", ")})`];
        if (!responseValidators.has(status)) responseValidators.set(status, compile(described.content?.["application/json"]?.schema));
        const validator = responseValidators.get(status);
        if (!validator) return body === undefined || body === "" ? [] : [`status ${status} of ${raw.operationId} has no body in the description`];
        if (validator(body)) return [];
        return (validator.errors ?? []).map((e) => `${e.instancePath || "(root)"} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
      },
    };
  }
}

/** What the simulator asks of GitHub's REST description. */
export interface RestDescription {
  operation(method: string, routePattern: string): OpenapiOperation | undefined;
  validateComponent(name: string, value: unknown): string[];
}

/**
 * The part of the description the simulator's own routes use, cut from the installed
 * @octokit/openapi by `npm run generate:openapi-subset` (simulator/openapi-subset.json, about
 * 240 KB): the operations of its routes and the components they reach, with the package's version.
 * Read instead of the whole 13 MB file (3 ms instead of 300 ms of CPU, once per test file under
 * jest: docs/development.md#test-time); anything it does not hold is looked up in the whole
 * description, read then. A subset cut from another version of the package is not used.
 */
export interface DescriptionSubset {
  openapiVersion: string;
  /** The simulator's routes GitHub does not describe (method and path shape), so not looked up again. */
  undescribed: string[];
  paths: Description["paths"];
  components: { schemas: Record<string, Json>; responses: Record<string, Json> };
}

/** The subset of `description` that `routes` (method + simulator pattern) use. */
export function cutDescriptionSubset(description: Description, openapiVersion: string, routes: ReadonlyArray<{ method: string; pattern: string }>): DescriptionSubset {
  const wanted = new Set(routes.map((r) => `${r.method.toUpperCase()} ${shape(routePath(r.pattern))}`));
  const paths: Description["paths"] = {};
  const components = description.components as { schemas?: Record<string, Json>; responses?: Record<string, Json> };
  const schemas = components.schemas ?? {};
  const responses: Record<string, Json> = {};
  const reached = new Set<string>();
  for (const [path, item] of Object.entries(description.paths)) {
    for (const method of HTTP_METHODS) {
      const raw = item[method];
      if (!raw || !wanted.has(`${method.toUpperCase()} ${shape(path)}`)) continue;
      (paths[path] ??= {})[method] = raw;
      reachableComponents(raw as unknown as Json, schemas, reached);
      for (const described of Object.values(raw.responses)) {
        const ref = described.$ref;
        if (!ref?.startsWith("#/components/responses/")) continue;
        const name = ref.slice("#/components/responses/".length);
        const shared = components.responses?.[name];
        if (shared === undefined) continue;
        responses[name] = shared;
        reachableComponents(shared, schemas, reached);
      }
    }
  }
  const keptSchemas = Object.fromEntries([...reached].sort().map((name) => [name, schemas[name]!]));
  const found = new Set(Object.entries(paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${shape(path)}`)));
  const undescribed = [...wanted].filter((key) => !found.has(key)).sort();
  return { openapiVersion, undescribed, paths, components: { schemas: keptSchemas, responses } };
}

/** A simulator pattern as the description's path: no GHES prefix, a trailing `*` one parameter. */
export function routePath(pattern: string): string {
  return pattern.replace(/^\/api\/v3(?=\/)/, "").replace(/\/\*$/, "/:rest");
}

/** The subset's file (in the repository, not in the package), found from simulator/ or build/simulator/. */
export function descriptionSubsetFile(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 3; i += 1) {
    const candidate = join(dir, "simulator", "openapi-subset.json");
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

function readSubset(): OpenapiDescription | undefined {
  const file = descriptionSubsetFile();
  if (!file) return undefined;
  try {
    const subset = JSON.parse(readFileSync(file, "utf8")) as DescriptionSubset;
    if (subset.openapiVersion !== installedOpenapiVersion()) return undefined;
    return new OpenapiDescription(subset as unknown as Description, subset.undescribed);
  } catch {
    return undefined;
  }
}

/** The installed @octokit/openapi's version. */
export function installedOpenapiVersion(): string {
  return (JSON.parse(readFileSync(packageFile("@octokit/openapi", "package.json"), "utf8")) as { version: string }).version;
}

let whole: OpenapiDescription | undefined;
let loaded: RestDescription | undefined;
let absent = false;

/**
 * Whether this process has warned that @octokit/openapi is absent: kept where every instance of
 * this module sees it, not in module state, since test runners evaluate a package's modules again
 * per test file (jest, vitest's vm pools) or per registry reset. Not on globalThis either: jest
 * gives each test file a global and a copy of `process` of its own, but every copy shares the
 * process object's prototype (as do module instances loaded with a query string).
 */
const WARNED = Symbol.for("tokensmith.simulator.openapi-absent-warned");
const processWide = Object.getPrototypeOf(process) as { [WARNED]?: true };

/** The whole api.github.com description as installed (13 MB; the GHES ones differ little here). */
export function wholeGithubRestDescription(): Description {
  return JSON.parse(readFileSync(packageFile("@octokit/openapi", "generated/api.github.com.json"), "utf8")) as Description;
}

/**
 * The api.github.com description, read once per module instance: the subset of the simulator's
 * routes first, the whole description on a miss.
 */
export function githubRestDescription(): RestDescription {
  if (loaded) return loaded;
  const subset = readSubset();
  const wholeOne = () => (whole ??= new OpenapiDescription(wholeGithubRestDescription()));
  loaded = {
    operation: (method, pattern) => (subset?.describes(method, pattern) ? subset : wholeOne()).operation(method, pattern),
    validateComponent: (name, value) => (subset?.hasSchema(name) ? subset : wholeOne()).validateComponent(name, value),
  };
  return loaded;
}

const OPENAPI_ABSENT_WARNING =
  "the simulator does not check request bodies against GitHub's REST description: @octokit/openapi is not installed (npm install --save-dev @octokit/openapi to check them)";

/**
 * The description when @octokit/openapi is installed, else undefined after one warning a process. It is a
 * development dependency (about 400 MB unpacked, too much for every install of tokensmith):
 * `tokensmith/testing` from `npm install tokensmith` alone runs without the body checks.
 */
export function githubRestDescriptionIfInstalled(): RestDescription | undefined {
  if (loaded) return loaded;
  if (absent) return undefined;
  try {
    packageFile("@octokit/openapi", "generated/api.github.com.json");
  } catch {
    absent = true;
    if (!processWide[WARNED]) {
      Object.defineProperty(processWide, WARNED, { value: true, configurable: true });
      process.emitWarning(OPENAPI_ABSENT_WARNING, { code: "TOKENSMITH_SIMULATOR_NO_OPENAPI" });
    }
    return undefined;
  }
  return githubRestDescription();
}
