import { createHmac, timingSafeEqual } from "node:crypto";

const HEADER = /^sha256=([0-9a-f]{64})$/i;

/**
 * `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>`, checked over the bytes as
 * received, before anything parses them. The header's form is checked first (its length says
 * nothing about the secret); the two 32-byte digests are then compared in constant time.
 * https://docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries
 */
export function verifySignature(secret: string, raw: Buffer, header: string | undefined): boolean {
  const match = HEADER.exec((header ?? "").trim());
  if (!match) return false;
  const expected = createHmac("sha256", secret).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(match[1]!, "hex"));
}

/** The header value GitHub would send for `raw` (tests and tooling). */
export function signatureFor(secret: string, raw: Buffer | string): string {
  return `sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`;
}
