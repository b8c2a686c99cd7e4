import { randomUUID } from "node:crypto";
import { openKeyValueStore } from "../../kv/key-value-store.js";
import { redactUrl } from "../../../shared/redact-url.js";
import type { Logger } from "../../log.js";
import { fail, ok, type CheckResult } from "./check-result.js";

/** A binding answers when a short-lived value written to it reads back. Unset bindings are said so. */
export async function checkStore(setting: string, url: string | null, log: Logger, timeoutMs: number): Promise<CheckResult> {
  if (!url) return ok(`${setting}: not set (nothing shared between instances)`);
  const shown = redactUrl(url);
  let store;
  try {
    store = openKeyValueStore(url, "tokensmith-doctor", { log, timeoutMs });
  } catch (error) {
    return fail(`${setting}: ${error instanceof Error ? error.message : "unusable"}`);
  }
  try {
    const key = `doctor:${randomUUID()}`;
    const written = await store.set(key, "ok", 10_000);
    const read = written ? await store.get<string>(key) : undefined;
    if (read !== "ok") return fail(`${setting} ${shown}: does not answer (the broker would serve as if it were unset)`);
    return ok(`${setting} ${shown}: answers${url.startsWith("memory:") ? " (this process only: not shared between instances)" : ""}`);
  } finally {
    await store.close().catch(() => undefined);
  }
}
