import ipaddr from "ipaddr.js";

/**
 * Whether a host — as given to `listen`, typed in a URL or sent in a `Host` header, without its
 * port — names this machine's loopback interface, in every spelling: `localhost` (and
 * `localhost.`), any address of 127.0.0.0/8 however written (`127.1`, `2130706433`, `0x7f.1`,
 * `0177.0.0.1`: the WHATWG URL host parser reads IPv4 the way `inet_aton`, and so `listen`,
 * does), `::1` in any form, and an IPv4-mapped IPv6 loopback (`::ffff:127.0.0.1`). ipaddr.js
 * classifies the parsed address, so no list of spellings is kept here.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.trim().replace(/^\[(.*)\]$/, "$1");
  if (bare === "" || /[\s/?#@\\]/.test(bare)) return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${bare.includes(":") ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return false;
  }
  const name = hostname.replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "").toLowerCase();
  if (name === "localhost") return true;
  if (!ipaddr.isValid(name)) return false;
  let address = ipaddr.parse(name);
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) address = (address as ipaddr.IPv6).toIPv4Address();
  return address.range() === "loopback";
}

/**
 * Whether a `Host` header names a loopback address and `port` (no port: 80). A name other than
 * `localhost` is refused even if it resolves to loopback: that is what a DNS-rebinding page sends.
 */
export function isLoopbackHostHeader(header: string | undefined, port: number): boolean {
  if (header === undefined || !/^[A-Za-z0-9.:[\]-]+$/.test(header)) return false;
  let url: URL;
  try {
    url = new URL(`http://${header}/`);
  } catch {
    return false;
  }
  const given = url.port === "" ? 80 : Number(url.port);
  return given === port && isLoopbackHost(url.hostname);
}
