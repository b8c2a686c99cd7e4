import type { Logger } from "../log.js";
import type { Metrics, UpstreamCall } from "../metrics.js";
import { inUpstreamSpan } from "../tracing.js";

/** Which platform an upstream URL belongs to (by origin), or null for an OIDC issuer or anything else. */
type PlatformOf = (url: URL) => "main" | "enterprise" | null;
/** Whose budget a call spent, from its Authorization header (`installation:<id>`, `app:<id>`, or anything else, not kept). */
export type PrincipalOf = (authorization: string | undefined) => string | null;

/**
 * Wraps the broker's injected fetch (every platform and issuer call goes through it) to count each
 * call, time it to its response headers, trace it (when tracing is on), and note the platform's x-ratelimit-remaining. The call's
 * label comes from the method and path, never the path itself (it names repositories). At
 * `debug`, `log` gets one line per call (docs/operations.md#running-it): its label, method, path
 * (no query) and status, what a tester reads in `sandbox.logs` to see what a job cost upstream.
 */
export function observeFetch(fetchImpl: typeof fetch, metrics: Metrics, platformOf: PlatformOf, now: () => number = performance.now.bind(performance), principalOf?: PrincipalOf, log?: Logger): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const call = upstreamCall(method, url.pathname, acceptOf(input, init));
    const started = now();
    try {
      const response = await inUpstreamSpan(call, method, url, () => fetchImpl(input, init));
      const seconds = (now() - started) / 1000;
      metrics.observeUpstream({ call, status: response.status, seconds });
      if (log?.isLevelEnabled("debug")) log.debug({ call, method, path: url.pathname, status: response.status, duration_ms: Math.round(seconds * 1000) }, "upstream call");
      const remaining = response.headers.get("x-ratelimit-remaining");
      const platform = remaining !== null && /^[0-9]+$/.test(remaining) ? platformOf(url) : null;
      if (platform) {
        metrics.rateLimitRemaining.set({ platform }, Number(remaining));
        const principal = principalOf?.(headerOf(input, init, "authorization") || undefined);
        const reset = Number(response.headers.get("x-ratelimit-reset"));
        if (principal) metrics.noteRemaining(platform, principal, Number(remaining), Number.isFinite(reset) && reset > 0 ? reset * 1000 : Date.now() + 3_600_000);
      }
      return response;
    } catch (error) {
      const seconds = (now() - started) / 1000;
      metrics.observeUpstream({ call, status: "error", seconds });
      if (log?.isLevelEnabled("debug")) log.debug({ call, method, path: url.pathname, status: "error", duration_ms: Math.round(seconds * 1000), err: error }, "upstream call");
      throw error;
    }
  };
}

const PLATFORM_CALLS: Array<[method: string, path: RegExp, call: UpstreamCall]> = [
  ["POST", /\/app\/installations\/\d+\/access_tokens$/, "mint"],
  ["GET", /\/app\/installations\/\d+$/, "installation_get"],
  ["GET", /\/app\/installations$/, "list_installations"],
  ["GET", /\/app$/, "app"],
  ["GET", /\/(?:repos\/[^/]+\/[^/]+|repositories\/\d+)\/installation$/, "installation_lookup"],
  ["GET", /\/installation\/repositories$/, "list_repositories"],
  ["DELETE", /\/installation\/token$/, "revoke"],
  ["POST", /\/graphql$/, "graphql"],
  ["GET", /\/repos\/[^/]+\/[^/]+\/pulls$/, "list_pulls"],
  ["GET", /\/repos\/[^/]+\/[^/]+\/pulls\/\d+$/, "get_pull"],
  // Policy files (and the listings of their directories): the only contents the broker reads.
  ["GET", /\/repos\/[^/]+\/[^/]+\/contents(?:\/.*)?$/, "policy_read"],
  ["PUT", /\/repos\/[^/]+\/[^/]+\/pulls\/\d+\/update-branch$/, "update_branch"],
];

/** The bounded label of one upstream call. */
function upstreamCall(method: string, path: string, accept: string): UpstreamCall {
  if (path.endsWith("/.well-known/openid-configuration")) return "oidc_discovery";
  for (const [m, pattern, call] of PLATFORM_CALLS) if (m === method && pattern.test(path)) return call;
  if (/\/repos\/[^/]+\/[^/]+\/git\//.test(path)) return "git";
  // The key-set fetch asks for plain JSON at whatever jwks_uri the issuer named; platform calls
  // ask for GitHub's media type.
  if (method === "GET" && !accept.includes("vnd.github")) return "jwks";
  return "other";
}

/**
 * The request's `accept` header, as `new Headers(…).get("accept")` would read it (names are
 * case-insensitive, repeated values joined with ", "), without building a Headers object for the
 * plain records the broker's own clients pass (one per upstream call on the /token path).
 */
function acceptOf(input: string | URL | Request, init: RequestInit | undefined): string {
  return headerOf(input, init, "accept");
}

/** One request header (lower-case `name`), read as acceptOf reads `accept`. */
function headerOf(input: string | URL | Request, init: RequestInit | undefined, name: string): string {
  const headers = init?.headers ?? (input instanceof Request ? input.headers : undefined);
  if (headers === undefined) return "";
  if (headers instanceof Headers) return headers.get(name) ?? "";
  const values: string[] = [];
  const entries: Iterable<readonly [string, string]> = Array.isArray(headers) ? (headers as Array<[string, string]>) : Object.entries(headers as Record<string, string>);
  for (const [key, value] of entries) if (key.toLowerCase() === name) values.push(String(value).trim());
  return values.join(", ");
}
