import { hash } from "node:crypto";
import { pino, stdSerializers, stdTimeFunctions, type Logger, type DestinationStream } from "pino";
import { redactUrlCredentials } from "../shared/redact-url.js";

export type { Logger };

const REDACTED = "[redacted]";

/**
 * What a credential looks like inside a text the broker did not write (a platform error that
 * echoes a header, a parse error quoting a body): GitHub tokens of every prefix, fine-grained
 * PATs, the old `v1.` installation tokens, JWTs (App JWTs, OIDC tokens; also one a length limit
 * cut short), PEM blocks (one cut short is redacted to the end) and `Bearer …` values. A URL's
 * user and password (`redis://user:pass@…`) are redacted by redactUrlCredentials.
 */
const SECRET_SHAPES = new RegExp(
  [
    // Classic (`ghs_` + 36) and stateless (`ghs_<app id>_<JWT>`, ~520, two dots: GitHub's pattern
    // `ghs_[A-Za-z0-9._]{36,}`) alike; a dot (or base64url's `-`) counts only with more of the
    // token after it, so a sentence's full stop stays.
    String.raw`\bgh[pousr]_[A-Za-z0-9_]{16,}(?:[.-]+[A-Za-z0-9_]+)*`,
    String.raw`\bgithub_pat_[A-Za-z0-9_]{16,}`,
    String.raw`\bv1\.[0-9a-f]{40}\b`,
    // A JWT, or what is left of one a length limit cut short: base64url JSON (`{"` → `eyJ`) and its dotted segments.
    String.raw`eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*){0,2}`,
    String.raw`-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(?:-----END [A-Z0-9 ]+-----|$)`,
    String.raw`\bBearer\s+[A-Za-z0-9._~+/=-]+`,
  ].join("|"),
  "gi",
);

/** The text with every token-, JWT-, key- or bearer-shaped part, and every URL's credentials, replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  return redactUrlCredentials(text.replace(SECRET_SHAPES, (match) => (/^bearer/i.test(match) ? `Bearer ${REDACTED}` : REDACTED)));
}

/** Every string inside `value` redacted (objects and arrays copied, cycles and depth bounded). */
export function redactDeep(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === "string") return redactSecrets(value);
  if (value === null || typeof value !== "object") return value;
  if (seen.has(value) || depth > 8) return "[…]";
  seen.add(value);
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, depth + 1, seen));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) copy[key] = redactDeep(item, depth + 1, seen);
  return copy;
}

/**
 * The log fields that carry upstream text (platform and issuer messages, error descriptions):
 * each passes through redactDeep when present, so no line that logs one can forget it. Other
 * fields cost nothing.
 */
export const UPSTREAM_TEXT_FIELDS = ["detail", "err", "platform_message", "platform_errors", "problem", "failed", "cause"] as const;

const serializers: Record<string, (value: unknown) => unknown> = {};
for (const field of UPSTREAM_TEXT_FIELDS) serializers[field] = (value) => redactDeep(value);
serializers.err = (value) => redactDeep(value instanceof Error ? stdSerializers.err(value) : value);
/** Log fields that carry a configured URL (an issuer, a store, an API base): never with its credentials. */
export const URL_FIELDS = ["issuer", "store", "url", "api_base", "jwks_uri"] as const;
for (const field of URL_FIELDS) serializers[field] = (value) => (typeof value === "string" ? redactUrlCredentials(value) : value);

/**
 * Structured JSON logs. Nothing secret is ever passed to the logger on purpose; the redact list
 * (field names that could carry one) and the upstream-text serializers (shapes of credentials
 * inside texts the broker copies from upstream) are the lines of defence behind that. By default
 * lines go to stdout, each written at once (pino's synchronous destination: a line logged is in
 * the OS before the call returns, whatever ends the process next). A hand-made writer that
 * gathered an event-loop turn's lines into one write saved under 1 % of /token's CPU and was
 * replaced (docs/operations.md#fast-paths).
 */
export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: options.level || "info",
      base: { service: "tokensmith" },
      // `"time":"2026-11-27T10:44:47.123Z"` and `"level":"info"`: what a person and a log
      // pipeline read without pino's numbers (docs/operations.md#running-it).
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers,
      redact: {
        // Top-level names only: wildcard paths cost on every line, and nothing nested is logged.
        paths: ["token", "oidcToken", "privateKey", "secret", "authorization"],
        censor: REDACTED,
      },
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

/** SHA-256 fingerprint of a credential, for audit lines that must name a token without showing it. */
export function fingerprint(secret: string): string {
  // One-shot crypto.hash: no Hash object per audit line (issue 28: a third of createHash's time).
  return `sha256:${hash("sha256", secret, "hex")}`;
}
