import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import ipaddr from "ipaddr.js";
import { LRUCache } from "lru-cache";
import proxyaddr from "proxy-addr";
import { BrokerError } from "../../shared/broker-error.js";
import type { Logger } from "../log.js";

/**
 * Admission per sender, before anything of a request is read (docs/operations.md#senders): every
 * sender (the client's address, an IPv6 client's /64, behind `TRUST_PROXY_HOPS` proxies the
 * address they saw) may start `rate` requests a second, with a bucket of a second's worth for
 * bursts. A request over that waits, in arrival order, until the sender's next start (a
 * connection that waits costs no CPU: its client sends nothing more on it meanwhile); when two
 * seconds' worth already wait, it is refused at once with 429 `sender_limited` and `Retry-After`.
 *
 * nginx's `limit_req` with `burst` (and without `nodelay`) behaves the same way. Hand-made rather
 * than `rate-limiter-flexible`'s RateLimiterQueue, whose queue per key is never forgotten: here
 * senders live in an LRU of bounded size, so a flood from many addresses cannot grow memory.
 */
export interface SenderAdmissionOptions {
  /**
   * The settings, read once per request: `rate`, requests a second per sender
   * (SENDER_REQUESTS_PER_SECOND; 0: no limit); `trustProxyHops`, proxies in front of the broker
   * whose X-Forwarded-For is believed (TRUST_PROXY_HOPS).
   */
  limits: () => { rate: number; trustProxyHops: number };
  now: () => number;
  log: Logger;
  /** Counts each request delayed or refused (tokensmith_senders_limited_total). */
  onLimited?: (outcome: "delayed" | "refused", route: string) => void;
  /** Senders kept at most (least recently seen forgotten first). */
  maxSenders?: number;
  /** Runs `wake` in `ms` (tests pass a fake clock's). */
  setTimer?: (wake: () => void, ms: number) => void;
}

interface Sender {
  /** Requests the sender may start now (fractional while refilling), at most `rate`. */
  tokens: number;
  refilledAt: number;
  waiting: Array<{ start: () => void; gone: () => boolean }>;
  /** A release is due. */
  timer: boolean;
}

/** Requests of this many seconds at the sender's rate may wait; one more is refused. */
const QUEUE_SECONDS = 2;
/** A refused request's body past this is not read: its connection closes after the answer. */
const DRAIN_BODY_MAX = 64 * 1024;

export function admitSenders(listener: RequestListener, options: SenderAdmissionOptions): RequestListener {
  // maxSize, not max: storage grows with the senders seen instead of 50,000 slots up front.
  const senders = new LRUCache<string, Sender>({ maxSize: options.maxSenders ?? 50_000, sizeCalculation: () => 1 });
  const setTimer = options.setTimer ?? ((wake: () => void, ms: number) => void setTimeout(wake, ms));
  const warned = new Map<string, number>();
  let warnedForwarded = false;

  const refill = (sender: Sender, rate: number) => {
    const at = options.now();
    sender.tokens = Math.min(rate, sender.tokens); // a lower rate holds at once
    if (at <= sender.refilledAt) return; // a clock that stood still or went back gives nothing
    sender.tokens = Math.min(rate, sender.tokens + ((at - sender.refilledAt) / 1000) * rate);
    sender.refilledAt = at;
  };

  const release = (sender: Sender) => {
    sender.timer = false;
    let rate: number;
    try {
      rate = options.limits().rate;
    } catch {
      rate = 0; // unreadable settings: start what waits (its route answers for itself)
    }
    if (rate <= 0) {
      for (const next of sender.waiting.splice(0)) if (!next.gone()) next.start();
      return;
    }
    refill(sender, rate);
    // A request whose client went away spends nothing and waits no more.
    sender.waiting = sender.waiting.filter((next) => !next.gone());
    while (sender.waiting.length > 0 && sender.tokens >= 1) {
      sender.tokens -= 1;
      sender.waiting.shift()!.start();
    }
    if (sender.waiting.length > 0) schedule(sender, rate);
  };

  const schedule = (sender: Sender, rate: number) => {
    if (sender.timer) return;
    sender.timer = true;
    setTimer(() => release(sender), Math.max(1, Math.ceil(((1 - sender.tokens) / rate) * 1000)));
  };

  return (req, res) => {
    let rate: number;
    let hops: number;
    try {
      ({ rate, trustProxyHops: hops } = options.limits());
    } catch {
      // Settings that cannot be read: the route answers (its own 500), nothing is thrown out of the server.
      return listener(req, res);
    }
    if (!(rate > 0)) return listener(req, res);
    if (hops === 0 && !warnedForwarded && req.headers["x-forwarded-for"] !== undefined) {
      // Behind a proxy that is not declared, every client is the proxy: one sender, one share.
      warnedForwarded = true;
      options.log.warn(
        { setting: "TRUST_PROXY_HOPS" },
        "requests carry X-Forwarded-For but TRUST_PROXY_HOPS is 0: each proxy in front of the broker counts as one sender (docs/deploying.md#5-tls-at-a-reverse-proxy)",
      );
    }
    const key = senderOf(req, hops);
    let sender = senders.get(key);
    if (!sender) {
      sender = { tokens: rate, refilledAt: options.now(), waiting: [], timer: false };
      senders.set(key, sender);
    }
    if (sender.waiting.length === 0) {
      refill(sender, rate);
      if (sender.tokens >= 1) {
        sender.tokens -= 1;
        return listener(req, res);
      }
    }
    const route = routeOf(req);
    if (sender.waiting.length >= Math.ceil(rate * QUEUE_SECONDS)) {
      options.onLimited?.("refused", route);
      noteRefusal(key, rate);
      return refuse(req, res, Math.ceil((sender.waiting.length + 1) / rate));
    }
    options.onLimited?.("delayed", route);
    const start = () => {
      try {
        listener(req, res);
      } catch {
        res.destroy(); // the listener answers its own failures; one that escaped must not end the process from a timer
      }
    };
    sender.waiting.push({ start, gone: () => req.destroyed || res.destroyed || res.writableEnded });
    schedule(sender, rate);
  };

  /** One warning per sender a minute at most: a flood must not become a flood of log lines. */
  function noteRefusal(key: string, rate: number) {
    const at = options.now();
    const last = warned.get(key);
    if (last !== undefined && at - last < 60_000) return;
    if (warned.size >= 1_000) warned.clear();
    warned.set(key, at);
    options.log.warn({ sender: key, requests_per_second: rate, queue_seconds: QUEUE_SECONDS }, "sender over its request rate with its queue full: refusing with 429 sender_limited");
  }
}

function routeOf(req: IncomingMessage): string {
  const path = (req.url ?? "").split("?", 1)[0]!;
  return ["/token", "/sign", "/releases", "/webhook"].includes(path) ? path : "other";
}

function refuse(req: IncomingMessage, res: ServerResponse, retryAfterSeconds: number) {
  const body = JSON.stringify(new BrokerError("sender_limited").toBody());
  const length = Number(req.headers["content-length"] ?? 0);
  // The unread body of a keep-alive request is read and dropped after the answer; a large one (or a
  // chunked one, of unknown length) is not worth reading: the connection closes instead.
  const close = req.headers["transfer-encoding"] !== undefined || !(length <= DRAIN_BODY_MAX);
  res.writeHead(429, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
    "retry-after": String(retryAfterSeconds),
    ...(close ? { connection: "close" } : {}),
  });
  res.end(body);
}

/**
 * The sender's key: the client's address as the nearest `hops` proxies saw it (X-Forwarded-For,
 * read from the right; a malformed entry stops the walk at the last trusted address), an IPv4
 * address mapped into IPv6 as IPv4, an IPv6 address by its /64 (one subscriber's prefix).
 */
export function senderOf(req: IncomingMessage, hops: number): string {
  let address: string;
  try {
    address = hops > 0 ? proxyaddr(req, (_address, i) => i < hops) : (req.socket.remoteAddress ?? "unknown");
  } catch {
    address = req.socket.remoteAddress ?? "unknown";
  }
  if (!ipaddr.isValid(address)) return address;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (parsed.kind() === "ipv4") return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${parts.join(":")}::/64`;
}
