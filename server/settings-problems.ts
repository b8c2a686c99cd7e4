import { plainHttpProblems } from "./plain-http-problems.js";
import { DEFAULT_SENDER_REQUESTS_PER_SECOND, MIN_SECRET_LENGTH, parsePolicyMode, parseUpstreamPointsPerMinute, type Env, type Settings } from "./settings.js";
import { secretFileProblems } from "./secret-files.js";
import { loadPkcs11Binding } from "./signing/pkcs11-signer.js";
import { parseStartSettings } from "./start-settings.js";

/** A setting that will not work as given: what the broker logs at start-up and `tokensmith doctor` prints. */
interface SettingProblem {
  /** The broker's log level for it. */
  level: "warn" | "error";
  /** Whether the broker is degraded by it (doctor's FAIL) or merely tells you (a trimmed secret). */
  fails: boolean;
  message: string;
  /** The log line's fields: names and problems, never a value. */
  fields: Record<string, string>;
}

/**
 * The settings read as a whole number, with the default a malformed value falls back to and the
 * least value accepted (0 where 0 switches something off; server/settings.ts): the broker still
 * starts, but not as the operator asked, so doctor fails it.
 */
export const WHOLE_NUMBER_SETTINGS: ReadonlyArray<readonly [name: string, fallback: number, least: 0 | 1]> = [
  ["RELEASES_CACHE_TTL_SECONDS", 300, 1],
  ["RELEASES_STALE_SECONDS", 86_400, 1],
  ["RELEASES_MAX_INSTALLATIONS", 100, 1],
  ["RELEASES_MAX_REPOSITORIES", 2000, 1],
  ["RELEASES_CRAWL_LEASE_SECONDS", 10, 1],
  ["UPDATE_BRANCH_PER_MINUTE", 60, 1],
  ["UPDATE_BRANCH_PER_HOUR", 500, 1],
  ["UPSTREAM_MAX_CONCURRENCY", 50, 1],
  ["POLICY_CACHE_SECONDS", 60, 1],
  ["SENDER_REQUESTS_PER_SECOND", DEFAULT_SENDER_REQUESTS_PER_SECOND, 0],
  ["TRUST_PROXY_HOPS", 0, 0],
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
  for (const { setting, message, fails } of secretFileProblems(env)) problems.push({ level: fails ? "error" : "warn", fails, fields: { setting }, message });
  // A key store URI without the binding: every App JWT of that platform fails (docs/deploying.md#keep-the-app-key-in-a-key-store).
  for (const platform of settings.enterprise ? [settings.main, settings.enterprise] : [settings.main]) {
    if (!platform.app.ok) continue;
    for (const key of [platform.app.credentials.key, platform.app.credentials.next]) {
      if (key?.kind !== "pkcs11") continue;
      const binding = loadPkcs11Binding();
      if (!binding.ok) problems.push({ level: "error", fails: true, fields: { setting: key.setting }, message: `PKCS#11 unavailable: ${binding.reason}: ${key.setting} cannot sign (answering 503 app_key_unavailable); install the broker where pkcs11js builds (docs/deploying.md#keep-the-app-key-in-a-key-store)` });
    }
  }
  const disabled: Record<string, string> = { PROCESS_TRIGGER_SECRET: "/sign and /releases answer 503 sign_disabled / releases_disabled", HOST_WEBHOOK_SECRET: "/webhook answers 503 webhook_disabled" };
  for (const { setting, why } of settings.weakSecrets) {
    problems.push({ level: "error", fails: true, fields: { setting }, message: `${setting} ${why} (at least ${MIN_SECRET_LENGTH} random characters; make one with openssl rand -hex 32): treated as unset, ${disabled[setting]}` });
  }
  for (const [setting, list] of [["ALLOWED_REPOSITORIES", settings.allowedRepositories], ["SIGN_ALLOWED_REPOSITORIES", settings.signAllowedRepositories]] as const) {
    if (!list || list.invalid.length === 0) continue;
    problems.push({ level: "error", fails: true, fields: { setting }, message: `${setting} has entries that are not owner/name (no entry is a pattern), which match nothing: ${list.invalid.map((e) => JSON.stringify(e.slice(0, 80))).join(", ")}` });
  }
  for (const name of settings.trimmedSecrets) {
    problems.push({ level: "warn", fails: false, fields: { setting: name }, message: `${name} has leading or trailing whitespace: it is trimmed before use` });
  }
  if (!settings.tokenPermissions.ok) {
    problems.push({ level: "error", fails: true, fields: { problem: settings.tokenPermissions.problem }, message: "TOKEN_PERMISSIONS unusable: /token answers 400 invalid_token_permissions" });
  }
  for (const [name, fallback, least] of WHOLE_NUMBER_SETTINGS) {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === "" || (/^[0-9]+$/.test(raw) && Number.isSafeInteger(Number(raw)) && Number(raw) >= least)) continue;
    problems.push({ level: "error", fails: true, fields: { setting: name }, message: `${name} is not a ${least === 1 ? "positive " : ""}whole number: using the default, ${fallback}` });
  }
  const points = parseUpstreamPointsPerMinute(env.UPSTREAM_POINTS_PER_MINUTE);
  if (points.problem) problems.push({ level: "error", fails: true, fields: { setting: "UPSTREAM_POINTS_PER_MINUTE" }, message: points.problem });
  const policy = parsePolicyMode(env.TOKEN_POLICY);
  if (policy.problem) problems.push({ level: "error", fails: true, fields: { setting: "TOKEN_POLICY" }, message: policy.problem });
  for (const { setting, message } of plainHttpProblems(settings)) problems.push({ level: "warn", fails: false, fields: { setting }, message });
  // The broker exits on these before it logs the rest (server/main.ts); doctor lists them with the others.
  for (const { setting, message } of parseStartSettings(env).problems) problems.push({ level: "error", fails: true, fields: { setting }, message });
  return problems;
}
