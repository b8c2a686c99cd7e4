import { readFileSync } from "node:fs";

/**
 * The broker's own version, from its package.json: the nearest one above this file whose name is
 * the package's (build/server/ when built, server/ when run from source). "unknown" if none is.
 */
export function buildVersion(): string {
  for (let up = "../"; up.length <= 12; up += "../") {
    try {
      const manifest = JSON.parse(readFileSync(new URL(`${up}package.json`, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (manifest.name === PACKAGE_NAME && typeof manifest.version === "string") return manifest.version;
    } catch {
      // none at this level: one more up
    }
  }
  return "unknown";
}

const PACKAGE_NAME = "tokensmith";
