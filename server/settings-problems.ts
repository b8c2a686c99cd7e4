import { parseAdminSettings } from "./admin/admin-settings.js";
import { plainHttpProblems } from "./plain-http-problems.js";
import { parsePolicyMode, parseUpstreamPointsPerMinute, type Env, type Settings } from "./settings.js";

/** A setting that will not work as given: what the broker logs at start-up and `tokensmith doctor` prints. */
export interface SettingProblem {
  /** The broker's log level for it. */
  level: "warn" | "error";
  /** Whether the broker is degraded by it (doctor's FAIL) or merely tells you (a trimmed secret). */
  fails: boolean;
  message: string;
  /** The log line's fields: names and problems, never a value. */
  fields: Record<string, string>;
}

/**
 * The settings read as a positive whole number, with the default a malformed value falls back to
 * (server/settings.ts): the broker still starts, but not as the operator asked, so doctor fails it.
 */
export const WHOLE_NUMBER_SETTINGS: ReadonlyArray<readonly [string, number]> = [
  ["RELEASES_CACHE_TTL_SECONDS", 300],
  ["RELEASES_STALE_SECONDS", 86_400],
  ["RELEASES_MAX_INSTALLATIONS", 100],
  ["RELEASES_MAX_REPOSITORIES", 2000],
  ["RELEASES_CRAWL_LEASE_SECONDS", 10],
  ["UPDATE_BRANCH_PER_MINUTE", 60],
  ["UPDATE_BRANCH_PER_HOUR", 500],
  ["UPSTREAM_MAX_CONCURRENCY", 50],
  ["POLICY_CACHE_SECONDS", 60],
];

/** Every start-up problem, one per line, in the order the broker logs them. */
export function settingsProblems(settings: Settings, env: Env): SettingProblem[] {
  const problems: SettingProblem[] = [];
  const app = settings.main.app;
  if (!app.ok) {
    for (const name of app.missing) {
      problems.push({ level: "warn", fails: true, fields: { setting: name }, message: `${name} is not set: /token and /sign answer 503 app_unconfigured, /releases too` });
    }
    if (app.problem) problems.push({ level: "error", fails: true, fields: { problem: app.problem }, message: "App credentials unusable: answering 503 app_unconfigured" });
  }
  for (const name of settings.trimmedSecrets) {
    problems.push({ level: "warn", fails: false, fields: { setting: name }, message: `${name} has leading or trailing whitespace: it is trimmed before use` });
  }
  if (!settings.tokenPermissions.ok) {
    problems.push({ level: "error", fails: true, fields: { problem: settings.tokenPermissions.problem }, message: "TOKEN_PERMISSIONS unusable: /token answers 400 invalid_token_permissions" });
  }
  for (const [name, fallback] of WHOLE_NUMBER_SETTINGS) {
    const raw = env[name];
    if (raw === undefined || raw.trim() === "" || /^[0-9]+$/.test(raw.trim()) && Number(raw.trim()) > 0 && Number.isSafeInteger(Number(raw.trim()))) continue;
    problems.push({ level: "error", fails: true, fields: { setting: name }, message: `${name} is not a positive whole number: using the default, ${fallback}` });
  }
  const points = parseUpstreamPointsPerMinute(env.UPSTREAM_POINTS_PER_MINUTE);
  if (points.problem) problems.push({ level: "error", fails: true, fields: { setting: "UPSTREAM_POINTS_PER_MINUTE" }, message: points.problem });
  const policy = parsePolicyMode(env.TOKEN_POLICY);
  if (policy.problem) problems.push({ level: "error", fails: true, fields: { setting: "TOKEN_POLICY" }, message: policy.problem });
  for (const { setting, message } of plainHttpProblems(settings)) problems.push({ level: "warn", fails: false, fields: { setting }, message });
  const admin = parseAdminSettings(env);
  if (!admin.enabled && admin.problem) problems.push({ level: "error", fails: true, fields: { setting: "ADMIN_PORT" }, message: admin.problem });
  return problems;
}
