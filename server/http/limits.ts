// The HTTP edge's limits and deadlines, in one place (docs/operations.md#running-it).

const MIB = 1024 * 1024;

/**
 * Every request is answered within this. The action gives one attempt 30 s (action/main.ts) and
 * then retries: an answer after that is read by nobody, while the broker may still mint a token
 * for it. 25 s leaves the answer 5 s to reach a runner on a slow network before the action gives up.
 */
export const REQUEST_DEADLINE_MS = 25_000;

/**
 * A request body must have arrived this long after the request started, or it is refused (408).
 * The platform waits 10 s for a webhook's answer, and a /token body is 64 KiB: a body still
 * arriving after 10 s is a trickle, not a slow network.
 */
export const BODY_READ_TIMEOUT_MS = 10_000;

/**
 * Bytes that bodies not yet authenticated may hold at once, process-wide, one budget per route so
 * that no route's bodies can starve another's: every /webhook body before its signature is
 * checked, every /token body before its OIDC token is verified (/sign reads its body after the
 * bearer check, outside both). A body counts the bytes it has actually delivered, never the length
 * it declares: a connection that declares 25 MiB and sends 300 bytes holds 300 bytes (counting
 * declared lengths let 40 idle connections of ~300 bytes each turn every /token away). Past its
 * route's budget a body is refused with 503 server_busy.
 */
export const BODY_BUDGETS = {
  /**
   * 512 full bodies of 64 KiB (/token's limit): with the default MAX_CONNECTIONS, every open
   * connection can hold a whole /token body at once, so /token's budget never refuses anyone
   * there; only a raised MAX_CONNECTIONS can reach it.
   */
  token: 32 * MIB,
  /** Two webhooks of the platform's largest size (25 MiB) fit. */
  webhook: 64 * MIB,
} as const;

/** Sent as Retry-After with 503 server_busy: bodies in flight are gone within the body read deadline. */
export const SERVER_BUSY_RETRY_AFTER_S = 2;

/** Sent as Retry-After with 503 deadline_exceeded. */
export const DEADLINE_RETRY_AFTER_S = 5;

/** Default of MAX_CONNECTIONS: open client connections; the next one is closed at once. */
export const DEFAULT_MAX_CONNECTIONS = 512;

/** MAX_CONNECTIONS as set: a whole number from 1, else the default and the problem to log. */
export function parseMaxConnections(raw: string | undefined): { value: number; problem?: string } {
  const text = raw?.trim() ?? "";
  if (text === "") return { value: DEFAULT_MAX_CONNECTIONS };
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value) || value < 1) {
    return { value: DEFAULT_MAX_CONNECTIONS, problem: `MAX_CONNECTIONS is not a whole number from 1: using ${DEFAULT_MAX_CONNECTIONS}` };
  }
  return { value };
}

/** node:http's own timers, as backstops behind the deadlines above. */
export const SERVER_TIMEOUTS = {
  /** Request line and headers, from their first byte (slow headers: Node's default is 60 s). */
  headersTimeoutMs: 10_000,
  /** The whole request received (Node's default is 300 s); the body read deadline answers first. */
  requestTimeoutMs: 30_000,
  /** An idle keep-alive connection (longer than a load balancer's usual 60 s, so it closes first). */
  keepAliveTimeoutMs: 65_000,
  /** How often node:http checks the two timeouts above (its default, 30 s, would let them run late by as much). */
  checkIntervalMs: 1_000,
};

/**
 * After refusing a body part-way (`Connection: close`), the broker keeps reading and discarding
 * what the client is still sending before it closes the socket (a lingering close). Closing a
 * socket with unread bytes makes the kernel answer with a reset, and a reset makes the client's
 * kernel drop the answer it had not read yet. Bounded by time only, as nginx's lingering close is
 * (lingering_time, lingering_timeout): a bound on bytes cut a client off mid-body (a 30 MiB body
 * to /token got EPIPE instead of its 413 once 8 MiB had been thrown away), while reading and
 * throwing bytes away costs nothing that time does not already bound.
 */
export const LINGER = {
  /** At most this long in all: a client still sending then is a trickle, not a slow network. */
  maxMs: 5_000,
  /** Closed once the client has sent nothing for this long. */
  idleMs: 1_000,
};
