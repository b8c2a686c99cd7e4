import { createLogger } from "../log.js";
import { resolveSecretFiles } from "../secret-files.js";
import { parseSettings } from "../settings.js";
import type { CommandIo } from "./releases-command.js";
import { checkApp } from "./doctor/check-app.js";
import { checkIssuer } from "./doctor/check-issuers.js";
import { parseQueueAddress } from "../webhook/queue-address.js";
import { fail, formatCheck, type CheckResult } from "./doctor/check-result.js";
import { checkSettings } from "./doctor/check-settings.js";
import { checkStore } from "./doctor/check-stores.js";
import { neededPermissions } from "./doctor/needed-permissions.js";

const TIMEOUT_MS = 10_000;

/**
 * `tokensmith doctor`: reads the settings from the environment as the broker does and checks them
 * against the world — settings parse, the App's key is accepted, each installation grants what
 * the broker will ask for, each issuer's keys are reachable, each Redis binding answers. One line
 * per check; exit 0 when none failed, 1 otherwise. Prints no token, key, secret or JWT.
 */
export async function doctorCommand(io: CommandIo): Promise<number> {
  const settings = parseSettings(resolveSecretFiles(io.env));
  const results: CheckResult[] = [];
  const report = (lines: CheckResult[]) => {
    for (const line of lines) io.out(formatCheck(line));
    results.push(...lines);
  };
  report(checkSettings(settings, io.env));

  const needs = neededPermissions(settings.tokenPermissions.ok ? settings.tokenPermissions.permissions : null, settings.autoUpdateBranches);
  for (const platform of [settings.main, settings.enterprise]) {
    if (!platform?.app.ok) continue; // said by checkSettings
    report(await checkApp({ platform, app: platform.app.credentials, needs, tokenPolicy: settings.tokenPolicy, fetch: io.fetch, timeoutMs: TIMEOUT_MS }));
  }
  for (const issuer of [settings.main.issuer, settings.enterprise?.issuer].filter((i): i is string => Boolean(i))) {
    report([await checkIssuer(issuer, io.fetch, TIMEOUT_MS)]);
  }
  const quiet = createLogger({ level: "silent" });
  const bindings: Array<[string, string | null]> = [
    ["SERVICE_JWKS_CACHE", settings.jwksCacheUrl],
    ["LEGACY_QUOTA_KV", settings.releasesKvUrl],
  ];
  if (settings.webhookQueueUrl) {
    // The queue's Redis, without the broker's own ?prefix= and ?lease_ms=.
    let redisUrl: string;
    try {
      redisUrl = parseQueueAddress(settings.webhookQueueUrl).redisUrl;
    } catch (error) {
      report([fail(`WEBHOOK_QUEUE: ${error instanceof Error ? error.message : "unusable"}`)]);
      redisUrl = "";
    }
    if (redisUrl) bindings.push(["WEBHOOK_QUEUE", redisUrl]);
  }
  for (const [setting, url] of bindings) report([await checkStore(setting, url, quiet, 2_000)]);

  const failed = results.filter((r) => r.status === "FAIL").length;
  io.out(failed === 0 ? "\nAll checks passed.\n" : `\n${failed} check${failed === 1 ? "" : "s"} failed.\n`);
  return failed === 0 ? 0 : 1;
}
