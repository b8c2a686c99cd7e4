// The JSON Schema the package ships for editors (schema/tokensmith-policy.schema.json) is the one
// the broker validates with: found by walking up from this module, from server/policy/ (tests) and
// build/server/policy/ (the installed package) alike.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const POLICY_SCHEMA_FILE = "schema/tokensmith-policy.schema.json";

export function readPolicySchema(): Record<string, unknown> {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, POLICY_SCHEMA_FILE);
    if (existsSync(candidate)) return JSON.parse(readFileSync(candidate, "utf8")) as Record<string, unknown>;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`${POLICY_SCHEMA_FILE} is not in the package`);
    dir = parent;
  }
}
