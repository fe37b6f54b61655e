import { BlockList, isIP, LookupFunction } from 'node:net';
import { lookup } from 'node:dns';

/**
 * Where a webhook may not be sent unless WEBHOOKS_ALLOW_PRIVATE_URLS=true: addresses of this
 * machine, of private networks, link-local ones (cloud metadata services live at 169.254.169.254
 * and fd00:ec2::254) and every other special-purpose range. A workspace admin must not be able to
 * make the service call into the network it runs in (SSRF). BlockList applies the IPv4 ranges to
 * IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) too.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT (Alibaba's metadata service is 100.100.100.200)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments (Oracle's metadata service is 192.0.0.192)
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64, the same
  ['100::', 64],
  ['2001:db8::', 32],
  ['2002::', 16], // 6to4
  ['fc00::', 7], // unique local (AWS metadata: fd00:ec2::254)
  ['fe80::', 10], // link-local
  ['fec0::', 10],
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/** Whether an IP address is one a webhook may not reach (unless private URLs are allowed). */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return BLOCKED.check(address, family === 4 ? 'ipv4' : 'ipv6');
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
