import ipaddr from 'ipaddr.js';
import { isIP, LookupFunction } from 'node:net';
import { lookup } from 'node:dns';

/**
 * Where a webhook may not be sent unless WEBHOOKS_ALLOW_PRIVATE_URLS=true: every address outside
 * the ordinary public unicast space. A workspace admin must not be able to make the service call
 * into the network it runs in (SSRF): this machine, private networks, link-local ones (cloud
 * metadata services live at 169.254.169.254 and fd00:ec2::254), carrier-grade NAT (Alibaba's
 * metadata service is 100.100.100.200), the IETF protocol block (Oracle's is 192.0.0.192).
 *
 * The ranges are ipaddr.js's, a maintained list that follows the IANA IPv4 and IPv6
 * Special-Purpose Address Registries (RFC 6890): an address whose `range()` is anything but
 * 'unicast' is refused. Checked against the registries (2025): ipaddr.js 2.5.0 names every IPv4
 * entry and every IPv6 entry but one, the Dummy IPv6 Prefix 100:0:0:1::/64 (RFC 9780); it also
 * leaves IPv4-compatible addresses (::a.b.c.d, ::/96, deprecated by RFC 4291 §2.5.5.1) as unicast.
 * Both lie outside 2000::/3, the only IPv6 space IANA allocates for global unicast (IANA IPv6
 * Address Space registry; RFC 4291 §2.4, RFC 3513): the rest is reserved by the IETF, or is
 * unique-local, link-local or multicast. So an IPv6 address outside 2000::/3 is refused too, which
 * closes both gaps and any future assignment in the reserved space.
 *
 * An IPv6 address that carries an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible
 * ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo
 * 2001::/32) is also checked as the IPv4 address it carries: a mapped one is where a dual-stack
 * socket connects, so it is allowed exactly when its IPv4 address is.
 */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = family === 4 ? ipaddr.IPv4.parse(address) : ipaddr.IPv6.parse(address);
  } catch {
    return true;
  }
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const carried = carriedIPv4(v6);
  if (carried && carried.range() !== 'unicast') return true;
  if (v6.range() === 'ipv4Mapped') return false; // checked as its IPv4 address just above
  return v6.range() !== 'unicast' || !v6.match(GLOBAL_UNICAST);
}

/** 2000::/3, IANA's global unicast space (see isBlockedAddress). */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/** The IPv4 address an IPv6 address carries, in the forms listed at isBlockedAddress; undefined for others. */
function carriedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = v6.parts;
  const fromWords = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const zeroUpTo = (n: number) => p.slice(0, n).every((w) => w === 0);
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible, not :: or ::1), ::ffff:0:a.b.c.d (translated)
  if (zeroUpTo(5) && p[5] === 0xffff) return fromWords(p[6], p[7]);
  if (zeroUpTo(6) && (p[6] !== 0 || p[7] > 1)) return fromWords(p[6], p[7]);
  if (zeroUpTo(4) && p[4] === 0xffff && p[5] === 0) return fromWords(p[6], p[7]);
  // NAT64, well-known prefix 64:ff9b::/96 (RFC 6052 §2.1); the local-use 64:ff9b:1::/48 (RFC 8215)
  // takes any prefix length, so where it carries the address is unknown: the range is refused anyway.
  if (p[0] === 0x64 && p[1] === 0xff9b && p.slice(2, 6).every((w) => w === 0)) return fromWords(p[6], p[7]);
  // 6to4 (RFC 3056 §2): 2002:AABB:CCDD::/48.
  if (p[0] === 0x2002) return fromWords(p[1], p[2]);
  // Teredo (RFC 4380 §4): 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC, the client's address inverted.
  if (p[0] === 0x2001 && p[1] === 0) return fromWords(p[6] ^ 0xffff, p[7] ^ 0xffff);
  return undefined;
}

/** A URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

export const MAX_URL_LENGTH = 2000;

/** Why a webhook URL is refused on its face (scheme, credentials, length), as a phrase about the URL; its host is checked by hostProblem. */
export function urlProblem(raw: string, allowPrivate: boolean): { problem: string } | { url: URL } {
  if (raw.length > MAX_URL_LENGTH) return { problem: `must be at most ${MAX_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: 'must be an absolute URL, like https://hooks.example.com/formwork' };
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return { problem: allowPrivate ? 'must be an http:// or https:// URL' : 'must be an https:// URL' };
  }
  if (url.username || url.password)
    return {
      problem:
        'must not carry a user name or password: every request is signed, so the receiver can verify it came from Formwork',
    };
  if (url.hash) return { problem: 'must not have a #fragment' };
  if (!url.hostname) return { problem: 'must name a host' };
  return { url };
}

const LOOKUP_TIMEOUT_MS = 5000;

/** Every address a host name resolves to (an IP literal: itself). */
function resolveAll(host: string): Promise<string[]> {
  if (isIP(host)) return Promise.resolve([host]);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`names a host (${host}) that DNS did not answer for within ${LOOKUP_TIMEOUT_MS / 1000} s`)),
      LOOKUP_TIMEOUT_MS,
    );
    lookup(host, { all: true, verbatim: true }, (err, addresses) => {
      clearTimeout(timer);
      if (err) reject(new Error(`names a host (${host}) that does not resolve (${err.code ?? 'no address'})`));
      else resolve(addresses.map((a) => a.address));
    });
  });
}

/**
 * Why a webhook host may not be used, or null: it does not resolve, or one of its addresses is
 * blocked (a name that resolves to both a public and a private address is refused too).
 */
export async function hostProblem(host: string, allowPrivate: boolean): Promise<string | null> {
  let addresses: string[];
  try {
    addresses = await resolveAll(host);
  } catch (err) {
    return (err as Error).message;
  }
  if (allowPrivate) return null;
  const blocked = addresses.find(isBlockedAddress);
  return blocked
    ? `resolves to ${blocked}, a loopback, private, link-local or reserved address: webhooks are sent to public addresses only`
    : null;
}

/** The error of a connection refused by safeLookup (its message says which address). */
export class BlockedAddressError extends Error {
  readonly code = 'EBLOCKEDADDRESS';
}

/**
 * A `lookup` for http agents that refuses blocked addresses: the socket connects to exactly the
 * address checked here, so a DNS answer that changes between the check and the connection (DNS
 * rebinding) cannot slip a private address in. IP literals never reach a lookup: the sender checks them.
 */
export function safeLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return (callback as (e: Error) => void)(err);
      const list = addresses as Array<{ address: string; family: number }>;
      const blocked = allowPrivate ? undefined : list.find((a) => isBlockedAddress(a.address));
      if (blocked) {
        return (callback as (e: Error) => void)(
          new BlockedAddressError(
            `${hostname} resolves to ${blocked.address}, a loopback, private, link-local or reserved address: not sent`,
          ),
        );
      }
      if (list.length === 0) return (callback as (e: Error) => void)(new Error(`${hostname} does not resolve`));
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
}
