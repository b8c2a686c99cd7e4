// Secrets as files (docs/settings.md#secrets-as-files): every secret setting NAME may instead be
// given as NAME_FILE, the path of a file holding the value (a mounted Kubernetes or Docker secret).
// The file is read when first needed and again when it changes (checked at most once a second), so
// a rotated secret file is picked up without a restart, like any setting.
import { readFileSync, statSync } from "node:fs";
import type { Env } from "./settings.js";

/**
 * The secret settings: each may instead be given as NAME_FILE, a file holding the value (the
 * convention of official container images; docs/settings.md#secrets-as-files). Key URIs are among
 * them: a URI's query may carry the PIN; so are the store URLs: a Redis URL may carry its password.
 */
export const SECRET_SETTING_NAMES = [
  "HOST_APP_PRIVATE_KEY", "HOST_APP_PRIVATE_KEY_NEXT", "HOST_APP_KEY_URI", "HOST_APP_KEY_URI_NEXT", "HOST_APP_KEY_PIN",
  "ENT_APP_PRIVATE_KEY", "ENT_APP_PRIVATE_KEY_NEXT", "ENT_APP_KEY_URI", "ENT_APP_KEY_URI_NEXT", "ENT_APP_KEY_PIN",
  "PROCESS_TRIGGER_SECRET", "HOST_WEBHOOK_SECRET",
  "SERVICE_JWKS_CACHE", "LEGACY_QUOTA_KV", "WEBHOOK_QUEUE",
] as const;

const RECHECK_MS = 1000;
const files = new Map<string, { checkedAt: number; mtimeMs: number; size: number; value: string | undefined; error?: string }>();

function readSecretFile(path: string, now: number): { value: string | undefined; error?: string } {
  const known = files.get(path);
  if (known && now - known.checkedAt < RECHECK_MS) return known;
  try {
    const stat = statSync(path);
    if (known && known.mtimeMs === stat.mtimeMs && known.size === stat.size && known.error === undefined) {
      known.checkedAt = now;
      return known;
    }
    // One trailing newline (`echo secret > file`) is not part of the value.
    const value = readFileSync(path, "utf8").replace(/\r?\n$/, "");
    const entry = { checkedAt: now, mtimeMs: stat.mtimeMs, size: stat.size, value };
    files.set(path, entry);
    return entry;
  } catch (error) {
    const entry = { checkedAt: now, mtimeMs: -1, size: -1, value: undefined, error: (error as NodeJS.ErrnoException).code ?? "unreadable" };
    files.set(path, entry);
    return entry;
  }
}

/** `env` with each unset secret NAME taken from NAME_FILE's file; the same object when no NAME_FILE is set. */
export function resolveSecretFiles(env: Env, now = Date.now()): Env {
  let resolved: Record<string, string | undefined> | null = null;
  for (const name of SECRET_SETTING_NAMES) {
    const path = env[`${name}_FILE`];
    if (path === undefined || path.trim() === "" || env[name] !== undefined) continue;
    resolved ??= { ...env };
    resolved[name] = readSecretFile(path.trim(), now).value;
  }
  return resolved ?? env;
}

/** What is wrong with the NAME_FILE settings (names and error codes only, never a value or a path's content). */
export function secretFileProblems(env: Env): Array<{ setting: string; message: string; fails: boolean }> {
  const problems: Array<{ setting: string; message: string; fails: boolean }> = [];
  for (const name of SECRET_SETTING_NAMES) {
    const path = env[`${name}_FILE`];
    if (path === undefined || path.trim() === "") continue;
    if (env[name] !== undefined) {
      problems.push({ setting: `${name}_FILE`, message: `${name} and ${name}_FILE are both set: ${name} is used`, fails: false });
      continue;
    }
    const read = readSecretFile(path.trim(), Date.now());
    if (read.error) problems.push({ setting: `${name}_FILE`, message: `${name}_FILE names a file that cannot be read (${read.error}): ${name} is unset`, fails: true });
  }
  return problems;
}
