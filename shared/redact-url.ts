/**
 * Credentials in URLs, kept out of everything the broker, its CLI and the action print or log. A Redis URL
 * carries its password as `redis://user:pass@host`, an API base or issuer may carry Basic auth
 * as `https://user:pass@host`, and a query string may carry a token. One helper, so every place
 * that shows a configured URL shows the same thing.
 */

/** The URL without user, password, query or fragment (`scheme://host[:port][/path]`); "(unparseable url)" when it is not one. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const path = parsed.pathname === "/" ? "" : parsed.pathname;
    return `${parsed.protocol}//${parsed.host}${path}`;
  } catch {
    return "(unparseable url)";
  }
}

// `://userinfo@`: what lies between `//` and the LAST `@` before the authority ends (`/`, `?`, `#`
// or whitespace), as the WHATWG URL parser reads it: a password holding an unencoded `@`
// (`https://u:p@ss@host`) is userinfo up to the second `@`, not a host `ss@host`. Anchored on `://`
// (not on the scheme: a scheme-shaped run of `a.a.a…` would make every dot a start, quadratic on
// the long upstream texts this runs over); each scan stops at the next `/`, so the pass is linear.
const USERINFO = /:\/\/[^\s/?#]*@/g;

/** Any text with the user and password of every URL in it replaced by `[redacted]`. */
export function redactUrlCredentials(text: string): string {
  return text.replace(USERINFO, "://[redacted]@");
}
