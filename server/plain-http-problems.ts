import { isLoopbackHost } from "../shared/loopback-address.js";
import { redactUrl } from "../shared/redact-url.js";
import type { Settings } from "./settings.js";

/**
 * The platform and issuer URLs that use plain `http` to a host other than this machine. Plain
 * http is accepted (tests and sandboxes run on loopback, docs/design.md#decisions-where-the-contract-was-open), but anywhere else whoever is
 * on the path reads the App JWT and every minted token (an API base), or swaps the keys the broker
 * trusts (an issuer): worth a warning, not a refusal.
 */
export function plainHttpProblems(settings: Settings): Array<{ setting: string; shown: string; message: string }> {
  const urls: Array<[string, string, string]> = [
    ["HOST_API_BASE", settings.main.apiBase, "the App JWT and every token cross the network in clear"],
    ["HOST_OIDC_ISSUER", settings.main.issuer, "anyone on the path can swap the keys the broker trusts"],
  ];
  if (settings.enterprise) {
    urls.push(["ENT_API_BASE", settings.enterprise.apiBase, "the App JWT and every token cross the network in clear"]);
    urls.push(["ENT_OIDC_ISSUER", settings.enterprise.issuer, "anyone on the path can swap the keys the broker trusts"]);
  }
  const problems = [];
  for (const [setting, url, risk] of urls) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      continue; // an empty or unusable URL is another problem's to report
    }
    if (parsed.protocol !== "http:" || isLoopbackHost(parsed.hostname)) continue;
    const shown = redactUrl(url);
    problems.push({ setting, shown, message: `${setting} ${shown} is plain http to a host that is not loopback: ${risk}; use https` });
  }
  return problems;
}
