/**
 * Credentials in URLs, kept out of everything the broker and its CLI print or log. A Redis URL
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

// `scheme://userinfo@`: everything between `//` and the first `@` before the host ends.
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi;

/** Any text with the user and password of every URL in it replaced by `[redacted]`. */
export function redactUrlCredentials(text: string): string {
  return text.replace(USERINFO, "$1[redacted]@");
}
