import { createHash } from "node:crypto";
import { pino, type Logger, type DestinationStream } from "pino";
import { createTurnWriter } from "./log-destination.js";

export type { Logger };

/**
 * Structured JSON logs. Nothing secret is ever passed to the logger; the redact list is a second
 * line of defence for field names that could carry one. By default lines go to stdout, one write
 * per event-loop turn (see log-destination.ts).
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
    options.destination ?? createTurnWriter(),
  );
}

/** SHA-256 fingerprint of a credential, for audit lines that must name a token without showing it. */
export function fingerprint(secret: string): string {
  return `sha256:${createHash("sha256").update(secret).digest("hex")}`;
}
