import type { AppCredentials } from "../../app-credentials.js";
import { APP_JWT_BACKDATE_SECONDS, APP_JWT_LIFETIME_SECONDS, signAppJwt } from "../../github/app-jwt.js";
import { describeKeySource, signerFor, SignerError, type AppKeySource } from "../../signing/app-key.js";
import { createPlatformClient, type PlatformClient } from "../../github/platform-client.js";
import { redactUrl } from "../../../shared/redact-url.js";
import type { PlatformSettings } from "../../settings.js";
import type { PolicyMode } from "../../policy/decide-policy.js";
import { fail, ok, warn, whyFailed, type CheckResult } from "./check-result.js";
import { checkOwnerPolicy, type PolicyInstallation } from "./check-owner-policy.js";
import { describePermissions, missingFrom, type Need } from "./needed-permissions.js";

const MAX_PAGES = 10;
/** Installations whose owner-policy read doctor checks (three requests each); the rest are named in one line. */
const MAX_POLICY_CHECKS = 100;

type InstallationJson = PolicyInstallation;

/**
 * The App key signs a JWT and the platform accepts it (`GET /app`: the App's slug and
 * permissions), then every installation's grant against what the broker asks for.
 * https://docs.github.com/rest/apps/apps#get-the-authenticated-app
 */
export async function checkApp(input: { platform: PlatformSettings; app: AppCredentials; needs: Need[]; tokenPolicy: PolicyMode; fetch: typeof fetch; timeoutMs: number }): Promise<CheckResult[]> {
  const { platform, app } = input;
  const shown = redactUrl(platform.apiBase);
  const where = platform.name === "main" ? shown : `${shown} (enterprise)`;
  const client = createPlatformClient({ apiBase: platform.apiBase, fetch: input.fetch, timeoutMs: input.timeoutMs });
  // Each key (the first, and …_NEXT during a rotation): open its store, sign a JWT, ask GET /app.
  const keys = [app.key, ...(app.next ? [app.next] : [])];
  const results: CheckResult[] = [];
  let accepted: { jwt: string; about: { slug?: unknown; permissions?: Record<string, string> }; key: AppKeySource } | undefined;
  for (const key of keys) {
    const checked = await checkKey(app.appId, key, { where, apiBase: platform.apiBase, platform: platform.name }, client, keys.length > 1 || key.kind === "pkcs11");
    results.push(...checked.results);
    if (checked.accepted && !accepted) accepted = { ...checked.accepted, key };
  }
  if (!accepted) return results;
  const { jwt, about } = accepted;
  if (app.next) {
    results.push(accepted.key === app.key
      ? ok(`App ${app.appId}: the broker signs with ${accepted.key.setting}; it switches to ${app.next.setting} when the platform answers 401`)
      : warn(`App ${app.appId}: the platform refuses ${app.key.setting} but accepts ${accepted.key.setting}: the broker switches to it after the first 401; finish the rotation (make ${accepted.key.setting} the first key)`));
  }
  results.push(ok(`App ${String(about.slug)} (id ${app.appId}) on ${where}: GET /app accepts its JWT; permissions ${describePermissions(about.permissions ?? {})}`));
  let installations: InstallationJson[];
  try {
    installations = await listInstallations(client, jwt);
  } catch (error) {
    return [...results, fail(`App ${app.appId}: GET /app/installations failed (${whyFailed(error)})`)];
  }
  if (installations.length === 0) return [...results, fail(`App ${String(about.slug)} is installed nowhere: install it on the repositories it serves`)];
  for (const [index, installation] of installations.entries()) {
    const granted = installation.permissions ?? {};
    const name = `installation ${installation.id} (${installation.account?.login ?? "?"})`;
    const gaps = input.needs
      .map((need) => ({ need, missing: missingFrom(granted, need.permissions) }))
      .filter((gap) => gap.missing.length > 0)
      .map((gap) => `${gap.need.feature} needs ${gap.missing.join(", ")}`);
    results.push(
      gaps.length > 0
        ? fail(`${name}: ${gaps.join("; ")}; it grants ${describePermissions(granted)}`)
        : ok(`${name}: grants ${describePermissions(granted)}; covers ${input.needs.map((n) => n.feature).join(", ")}`),
    );
    // Trust policies (TOKEN_POLICY optional or required): can the installation read its owner's `.github`?
    if (input.tokenPolicy !== "off" && index < MAX_POLICY_CHECKS) {
      results.push(await checkOwnerPolicy({ client, jwt, installation, required: input.tokenPolicy === "required" }));
    }
  }
  if (input.tokenPolicy !== "off") {
    const unchecked = installations.length - MAX_POLICY_CHECKS;
    if (unchecked > 0) results.push(warn(`owner policy read not checked for ${unchecked} more installation${unchecked === 1 ? "" : "s"} (doctor checks the first ${MAX_POLICY_CHECKS})`));
  }
  return results;
}

async function listInstallations(client: PlatformClient, jwt: string): Promise<InstallationJson[]> {
  const all: InstallationJson[] = [];
  for (let page = 1; page <= MAX_PAGES; page += 1) {
    const answer = await client({ method: "GET", path: `/app/installations?per_page=100&page=${page}`, bearer: jwt });
    const items = Array.isArray(answer.data) ? (answer.data as InstallationJson[]) : [];
    all.push(...items);
    if (items.length < 100) break;
  }
  return all;
}

/** Network error codes (the error's or a cause's), as Node and undici name them. */
const REFUSED = new Set(["ECONNREFUSED"]);
const DNS = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_FAIL"]);
const TIMEOUT = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "TimeoutError", "AbortError"]);

function networkCode(error: unknown): string | undefined {
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause; depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && code !== "") return code;
    const name = (cause as { name?: unknown }).name;
    if (name === "TimeoutError" || name === "AbortError") return name;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Why GET /app failed, blaming what is wrong: the network (with the host) when no answer came, the
 * App id when the platform knows no such App ("Integration not found"), the key when the platform
 * cannot verify the JWT with the App's keys, and nothing in particular for anything else.
 * https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
 */
export function appRefusal(error: unknown, at: { appId: string | number; where: string; apiBase: string; platform: "main" | "enterprise" }): string {
  const prefix = at.platform === "main" ? "HOST" : "ENT";
  const status = (error as { status?: unknown }).status;
  const answered = typeof status === "number" && (error as { response?: unknown }).response !== undefined;
  let host = at.apiBase;
  try {
    host = new URL(at.apiBase).host;
  } catch {
    // shown as configured (redacted by the caller's formatting)
  }
  if (!answered) {
    const code = networkCode(error) ?? "network error";
    if (REFUSED.has(code)) return `App ${at.appId}: cannot reach ${host}: connection refused (${code}): is ${prefix}_API_BASE right, and is the platform reachable from here?`;
    if (DNS.has(code)) return `App ${at.appId}: cannot reach ${host}: its name does not resolve (DNS: ${code}): is ${prefix}_API_BASE right, and does this machine's DNS know it?`;
    if (TIMEOUT.has(code)) return `App ${at.appId}: cannot reach ${host}: no answer in time (${code}): is a firewall or proxy in the way?`;
    return `App ${at.appId}: cannot reach ${host} (${whyFailed(error)}): is ${prefix}_API_BASE right, and is the platform reachable from here?`;
  }
  const message = (error as { response?: { data?: { message?: unknown } } }).response?.data?.message;
  if (typeof message === "string" && /integration not found/i.test(message)) {
    return `App ${at.appId} on ${at.where}: GET /app: no App with that id (${whyFailed(error)}): is ${prefix}_APP_ID this App's id (the App's settings, "App ID")?`;
  }
  if (status === 401) return `App ${at.appId} on ${at.where}: GET /app refused the App JWT (${whyFailed(error)}): is the private key this App's?`;
  return `App ${at.appId} on ${at.where}: GET /app failed (${whyFailed(error)})`;
}

/**
 * One key: for a key store, each step named (module, slot, login, object: opening the session and
 * finding the key; sign: a test JWT), then whether the platform accepts the JWT (GET /app).
 */
async function checkKey(appId: string, key: AppKeySource, at: { where: string; apiBase: string; platform: "main" | "enterprise" }, client: PlatformClient, nameKey: boolean): Promise<{ results: CheckResult[]; accepted?: { jwt: string; about: { slug?: unknown; permissions?: Record<string, string> } } }> {
  const shown = describeKeySource(key);
  const results: CheckResult[] = [];
  if (key.kind === "pkcs11") {
    try {
      await signerFor(key).open();
      results.push(ok(`App ${appId}: key store ${shown}: module loaded, token found, logged in, private key found`));
    } catch (error) {
      const step = error instanceof SignerError ? error.step : "module";
      return { results: [fail(`App ${appId}: key store ${shown}: the ${step} step failed (${error instanceof SignerError ? error.reason : whyFailed(error)})`)] };
    }
  }
  let jwt: string;
  try {
    const iat = Math.floor(Date.now() / 1000) - APP_JWT_BACKDATE_SECONDS;
    jwt = await signAppJwt(key, appId, iat, iat + APP_JWT_LIFETIME_SECONDS);
  } catch (error) {
    if (!nameKey) return { results: [fail(`App ${appId}: could not sign an App JWT with the private key (${whyFailed(error)})`)] };
    const reason = error instanceof SignerError ? `the ${error.step} step failed (${error.reason})` : whyFailed(error);
    return { results: [...results, fail(`App ${appId}: could not sign an App JWT with ${shown} (${reason})`)] };
  }
  try {
    const about = (await client({ method: "GET", path: "/app", bearer: jwt })).data as { slug?: unknown; permissions?: Record<string, string> };
    return { results: nameKey ? [...results, ok(`App ${appId} on ${at.where}: GET /app accepts the JWT signed with ${shown}`)] : results, accepted: { jwt, about } };
  } catch (error) {
    const refusal = appRefusal(error, { appId, ...at });
    if (!nameKey) return { results: [fail(refusal)] };
    const status = (error as { status?: unknown }).status;
    // A refusal of the JWT names the key; a network failure or an unknown App id is not the key's fault.
    if (status === 401 && !refusal.includes("no App with that id")) return { results: [...results, fail(`App ${appId} on ${at.where}: GET /app refused the App JWT signed with ${shown} (${whyFailed(error)}): is that key this App's?`)] };
    return { results: [...results, fail(refusal)] };
  }
}
