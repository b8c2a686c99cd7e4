import { settingsProblems } from "../../settings-problems.js";
import { redactUrl } from "../../../shared/redact-url.js";
import type { Env, Settings } from "../../settings.js";
import { fail, ok, warn, type CheckResult } from "./check-result.js";

/** Every setting parses: the broker's own start-up messages, one line each; `ok` when there are none that fail. */
export function checkSettings(settings: Settings, env: Env): CheckResult[] {
  const problems = settingsProblems(settings, env);
  const lines = problems.map((p) => (p.fails ? fail : warn)(p.fields.problem ? `${p.message} (${p.fields.problem})` : p.message));
  if (settings.enterprise && !settings.enterprise.app.ok) {
    const app = settings.enterprise.app;
    for (const name of app.missing) lines.push(fail(`${name} is not set: tokens from ${redactUrl(settings.enterprise.issuer)} answer 503 app_unconfigured`));
    if (app.problem) lines.push(fail(`enterprise App credentials unusable (${app.problem})`));
  }
  if (!problems.some((p) => p.fails) && lines.every((l) => l.status !== "FAIL")) lines.unshift(ok("settings parse"));
  return lines;
}
