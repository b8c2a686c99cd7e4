// The action's permission-<name> inputs held together with the catalogue they are generated from
// (shared/app-permissions.ts) and with GitHub's published OpenAPI `app-permissions` schema
// (@octokit/openapi, read here directly), plus the action's pure handling of them: reading the
// inputs (permission-inputs.ts) and checking the answer's `permissions` (check-answer.ts).
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { describe, expect, it } from "@jest/globals";
import { checkAnswer } from "../action/check-answer.js";
import { permissionInputName, readPermissionInputs } from "../action/permission-inputs.js";
import { permissionInputsMarkdown } from "../action/permission-inputs-markdown.js";
import { APP_PERMISSIONS } from "../shared/app-permissions.js";
import { ACTION_YML, actionInputs } from "./support/action-runner.js";

const root = new URL("../", import.meta.url);
const actionYml = readFileSync(ACTION_YML, "utf8");

/** Every `app-permissions` schema of the installed OpenAPI descriptions: name → levels offered, and the description. */
function openApiPermissions(): Map<string, { levels: Set<string>; description?: string }> {
  const require = createRequire(import.meta.url);
  const generated = join(dirname(require.resolve("@octokit/openapi/package.json")), "generated");
  const found = new Map<string, { levels: Set<string>; description?: string }>();
  for (const file of readdirSync(generated).filter((f) => f.endsWith(".json") && !f.endsWith(".deref.json")).sort()) {
    const schema = JSON.parse(readFileSync(join(generated, file), "utf8")).components.schemas["app-permissions"];
    for (const [name, property] of Object.entries(schema.properties as Record<string, { enum?: string[]; description?: string }>)) {
      const entry = found.get(name) ?? { levels: new Set<string>() };
      for (const level of property.enum ?? []) entry.levels.add(level);
      entry.description ??= property.description;
      found.set(name, entry);
    }
  }
  return found;
}

/** The description of one input in action.yml (generated lines are `description: "<JSON string>"`). */
function inputDescription(name: string): string {
  const match = new RegExp(`^ {2}${name}:\\n {4}description: (".*")$`, "m").exec(actionYml);
  expect(match).not.toBeNull();
  return JSON.parse(match![1]!) as string;
}

describe("action.yml, the catalogue and GitHub's OpenAPI app-permissions schema", () => {
  const schema = openApiPermissions();
  const permissionInputs = actionInputs(actionYml).filter((input) => input.name.startsWith("permission-"));

  it("the catalogue is exactly the schema's permissions, each with the levels the schema offers", () => {
    expect(Object.keys(APP_PERMISSIONS).sort()).toEqual([...schema.keys()].sort());
    for (const [name, levels] of Object.entries(APP_PERMISSIONS)) expect([...levels].sort()).toEqual([...schema.get(name)!.levels].sort());
  });

  it("action.yml has one optional permission-<name> input per catalogue permission, hyphenated, and no other", () => {
    expect(permissionInputs.map((input) => input.name).sort()).toEqual(Object.keys(APP_PERMISSIONS).map(permissionInputName).sort());
    for (const input of permissionInputs) expect(input).toEqual({ name: input.name, required: false });
    // As actions/create-github-app-token spells them.
    expect(permissionInputName("pull_requests")).toBe("permission-pull-requests");
    expect(permissionInputs.map((input) => input.name)).toContain("permission-organization-custom-org-roles");
  });

  it("each input's description is GitHub's wording and the read/write levels the schema offers", () => {
    for (const [name, entry] of schema) {
      const description = inputDescription(permissionInputName(name));
      expect(description.startsWith(entry.description!.trim())).toBe(true);
      const offered: string[] = [...entry.levels];
      expect(description).toContain(`One of: ${["read", "write"].filter((level) => offered.includes(level)).join(", ")}.`);
    }
    expect(inputDescription("permission-workflows")).toContain("One of: write.");
  });

  it("action.yml is what scripts/generate-app-permissions.js writes (npm run generate:app-permissions)", () => {
    const regenerated = execFileSync(process.execPath, ["scripts/generate-app-permissions.js", "--action-yml-stdout"], { cwd: root, encoding: "utf8" });
    expect(actionYml).toBe(regenerated);
  });

  it("declares the permissions output", () => {
    expect(actionYml).toMatch(/^outputs:\n[\s\S]*^ {2}permissions:\n {4}description: /m);
  });

  it("docs/action.md's permission-inputs table is the generated one (npm run docs)", () => {
    const doc = readFileSync(new URL("docs/action.md", root), "utf8");
    const start = "<!-- permission-inputs:start -->\n";
    const from = doc.indexOf(start);
    expect(from).toBeGreaterThanOrEqual(0);
    expect(doc.slice(from + start.length, doc.indexOf("\n<!-- permission-inputs:end -->"))).toBe(permissionInputsMarkdown());
  });
});

describe("readPermissionInputs", () => {
  const reading = (inputs: Record<string, string>) => readPermissionInputs({ getInput: (name) => inputs[name] ?? "" });

  it("no input set → undefined (the broker's whole grant, as before)", () => {
    expect(reading({})).toBeUndefined();
    expect(reading({ "permission-contents": "  " })).toBeUndefined();
  });

  it("the inputs set become the request, by catalogue name", () => {
    expect(reading({ "permission-contents": "read", "permission-pull-requests": " write ", "permission-organization-custom-org-roles": "read" })).toEqual({
      contents: "read",
      pull_requests: "write",
      organization_custom_org_roles: "read",
    });
  });

  it.each([
    ["permission-contents", "admin", 'tokensmith: permission-contents must be read or write, not "admin".'],
    ["permission-contents", "Write", 'tokensmith: permission-contents must be read or write, not "Write".'],
    ["permission-contents", "read\n::error::x", 'tokensmith: permission-contents must be read or write, not "read\\u000a::error::x".'],
    ["permission-workflows", "read", "tokensmith: permission-workflows: permission workflows cannot be read: the platform offers write."],
  ])("%s: %j fails the step before anything is sent", (name, value, message) => {
    expect(() => reading({ [name]: value })).toThrow(message);
  });
});

/** 0 → a, 25 → z, 26 → ba, …: distinct names of letters only. */
const letters = (i: number): string => (i < 26 ? "" : letters(Math.floor(i / 26))) + String.fromCharCode(97 + (i % 26));

describe("checkAnswer: the answer's permissions", () => {
  const now = Date.now();
  const answer = (permissions?: unknown) => ({
    token: "ghs_checkAnswerPermissions000000000000001",
    expires_at: new Date(now + 3600_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
    repository: "octo-org/app",
    ...(permissions === undefined ? {} : { permissions }),
  });
  const check = (permissions: unknown, asked?: Record<string, "read" | "write">) =>
    checkAnswer(answer(permissions), { repositories: ["octo-org/app"], now, ...(asked ? { permissions: asked } : {}) });

  it("absent is fine when nothing was asked (older brokers), and the output is then unset", () => {
    const result = check(undefined);
    expect(result.ok && result.answer.permissions).toBe(undefined);
  });

  it("present: read through as a clean object", () => {
    const result = check({ contents: "write", metadata: "read" });
    expect(result).toMatchObject({ ok: true, answer: { permissions: { contents: "write", metadata: "read" } } });
  });

  it("asked for: the same, less, or with the platform's metadata: read is accepted", () => {
    expect(check({ contents: "read" }, { contents: "read" }).ok).toBe(true);
    expect(check({ contents: "read", metadata: "read" }, { contents: "read" }).ok).toBe(true);
    expect(check({ contents: "read" }, { contents: "write", issues: "read" }).ok).toBe(true);
  });

  it.each([
    [undefined, { contents: "read" }, "the answer does not say which permissions the token has, though the step's permission-<name> inputs asked for some"],
    [{ contents: "write" }, { contents: "read" }, "the token has contents: write, beyond what the step's permission-<name> inputs asked for (contents: read)"],
    [{ contents: "read", issues: "read" }, { contents: "read" }, "the token has issues: read, beyond what"],
    [{ contents: "read", metadata: "write" }, { contents: "read" }, "the token has metadata: write, beyond what"],
    [["contents"], undefined, 'permissions "[\\"contents\\"]" is not an object'],
    ["contents=read", undefined, 'permissions "contents=read" is not an object'],
    [{ Contents: "read" }, undefined, 'permissions names "Contents", not a permission name'],
    [{ "contents\n::error::": "read" }, undefined, 'permissions names "contents\\u000a::error::", not a permission name'],
    [{ contents: "owner" }, undefined, 'permission contents is "owner", not read, write or admin'],
    [{ contents: 2 }, undefined, 'permission contents is "2", not read, write or admin'],
    [Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`p_${letters(i)}`, "read"])), undefined, "permissions names more than 200 permissions"],
  ])("%j (asked %j) is refused: %s", (permissions, asked, problem) => {
    const result = check(permissions, asked as Record<string, "read" | "write"> | undefined);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.problem).toContain(problem);
      expect(result.token).toBe("ghs_checkAnswerPermissions000000000000001"); // usable: masked and revoked by run.ts
    }
  });
});
