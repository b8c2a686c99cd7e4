import { fetchText } from "../../github/platform-request.js";
import { redactUrl } from "../../../shared/redact-url.js";
import { fail, ok, whyFailed, type CheckResult } from "./check-result.js";

/** Each trusted issuer's discovery document and key set answer, as the broker fetches them. Every URL shown without its credentials. */
export async function checkIssuer(issuerUrl: string, fetchImpl: typeof fetch, timeoutMs: number): Promise<CheckResult> {
  const issuer = redactUrl(issuerUrl);
  const getJson = async (url: string): Promise<unknown> => {
    const { response, text } = await fetchText(fetchImpl, timeoutMs, url, { headers: { accept: "application/json" } });
    if (!response.ok) throw new Error(`HTTP ${response.status} from ${redactUrl(url)}`);
    return JSON.parse(text);
  };
  let jwksUri: unknown;
  try {
    jwksUri = ((await getJson(`${issuerUrl}/.well-known/openid-configuration`)) as { jwks_uri?: unknown } | null)?.jwks_uri;
  } catch (error) {
    return fail(`issuer ${issuer}: discovery document unreachable (${whyFailed(error)})`);
  }
  if (typeof jwksUri !== "string") return fail(`issuer ${issuer}: discovery document has no jwks_uri`);
  const jwksShown = redactUrl(jwksUri);
  try {
    const keys = ((await getJson(jwksUri)) as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys) || keys.length === 0) return fail(`issuer ${issuer}: key set ${jwksShown} has no keys`);
    return ok(`issuer ${issuer}: discovery and key set reachable (${keys.length} key${keys.length === 1 ? "" : "s"})`);
  } catch (error) {
    return fail(`issuer ${issuer}: key set ${jwksShown} unreachable (${whyFailed(error)})`);
  }
}
