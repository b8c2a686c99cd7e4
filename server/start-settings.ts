import { parseAdminSettings, type AdminSettings } from "./admin/admin-settings.js";
import { parseMaxConnections } from "./http/limits.js";
import { brokerHost, isListenHost, parsePort } from "./listen-host.js";
import type { Env } from "./settings.js";

/**
 * The settings read once, when the process starts (docs/settings.md#when-settings-are-read): where
 * to listen, how much to log, the admin listener. Unlike the per-request settings, a wrong one
 * cannot fall back to anything the operator asked for, so the broker does not start: one line
 * naming the setting, exit 1 (server/main.ts), and `doctor` fails on it.
 */
const START_SETTING_NAMES = ["PORT", "HOST", "LOG_LEVEL", "MAX_CONNECTIONS", "ADMIN_PORT", "ADMIN_HOST"] as const;

/** pino's levels (https://getpino.io/#/docs/api?id=level-string). */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

interface StartProblem {
  setting: (typeof START_SETTING_NAMES)[number];
  message: string;
}

interface StartSettings {
  port: number;
  host: string;
  logLevel: LogLevel;
  maxConnections: number;
  admin: AdminSettings;
  /** Empty when every start-up setting is usable; otherwise the broker must not start. */
  problems: StartProblem[];
}

const NOT_STARTING = "the broker does not start";

/** LOG_LEVEL: one of pino's levels, case-insensitive; unset or blank → info. */
export function parseLogLevel(raw: string | undefined): LogLevel | null {
  const text = (raw ?? "").trim().toLowerCase();
  if (text === "") return "info";
  return (LOG_LEVELS as readonly string[]).includes(text) ? (text as LogLevel) : null;
}

/** Every start-up setting parsed, with one problem per setting that is wrong (each message names it). */
export function parseStartSettings(env: Env): StartSettings {
  const problems: StartProblem[] = [];
  const port = parsePort(env.PORT, 8080);
  if (port === "invalid" || port === null) problems.push({ setting: "PORT", message: `PORT is not a port number (0-65535): ${NOT_STARTING}` });
  const host = brokerHost(env);
  if (!isListenHost(host)) problems.push({ setting: "HOST", message: `HOST is not an IP address or a host name: ${NOT_STARTING}` });
  const logLevel = parseLogLevel(env.LOG_LEVEL);
  if (logLevel === null) problems.push({ setting: "LOG_LEVEL", message: `LOG_LEVEL is not one of ${LOG_LEVELS.join(", ")}: ${NOT_STARTING}` });
  const maxConnections = parseMaxConnections(env.MAX_CONNECTIONS);
  if (maxConnections.problem) problems.push({ setting: "MAX_CONNECTIONS", message: `MAX_CONNECTIONS is not a whole number from 1: ${NOT_STARTING}` });
  const admin = parseAdminSettings(env);
  if (!admin.enabled) for (const problem of admin.problems ?? []) problems.push({ setting: problem.setting, message: `${problem.message}: ${NOT_STARTING}` });
  return {
    port: typeof port === "number" ? port : 8080,
    host,
    logLevel: logLevel ?? "info",
    maxConnections: maxConnections.value,
    admin,
    problems,
  };
}
