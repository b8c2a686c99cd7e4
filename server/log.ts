import { createHash } from "node:crypto";
import { pino, type Logger, type DestinationStream } from "pino";

export type { Logger };

/**
 * Structured JSON logs. Nothing secret is ever passed to the logger; the redact list is a second
 * line of defence for field names that could carry one.
 *
 * By default each line is written to stdout synchronously: an audit line reaches the OS before the
 * token it names is sent, so a crash cannot lose it, and a line costs one write(2) on the event
 * loop instead of a round trip through libuv's thread pool (pino's default asynchronous writer),
 * where it would queue behind the OIDC signature checks that WebCrypto runs there.
 */
export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: options.level || "info",
      base: { service: "tokensmith" },
      redact: {
        // Top-level names only: wildcard paths cost on every line, and nothing nested is logged.
        paths: ["token", "oidcToken", "privateKey", "secret", "authorization"],
        censor: "[redacted]",
      },
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

/** SHA-256 fingerprint of a credential, for audit lines that must name a token without showing it. */
export function fingerprint(secret: string): string {
  return `sha256:${createHash("sha256").update(secret).digest("hex")}`;
}
