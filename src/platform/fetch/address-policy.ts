import ipaddr from 'ipaddr.js';

type IP = ipaddr.IPv4 | ipaddr.IPv6;

/** Why an address may not be fetched; `public` is the only one that may. */
export type AddressCategory =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'metadata'
  | 'unique_local'
  | 'unspecified'
  | 'carrier_grade_nat'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'benchmarking'
  | 'documentation'
  | 'protocol_assignment'
  | 'site_local'
  | 'teredo'
  | 'ipv4_compatible'
  | 'not_global';

/** Phrases for error details ("The URL points to a loopback address, ..."). */
export const CATEGORY_LABELS: Record<AddressCategory, string> = {
  public: 'a public address',
  loopback: 'a loopback address',
  private: 'a private network address',
  link_local: 'a link-local address',
  metadata: 'a cloud metadata address',
  unique_local: 'a unique-local (private IPv6) address',
  unspecified: 'an unspecified address (0.0.0.0 or ::)',
  carrier_grade_nat: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  reserved: 'a reserved address',
  benchmarking: 'a benchmarking address',
  documentation: 'a documentation-only address',
  protocol_assignment: 'an IETF protocol assignment address',
  site_local: 'a site-local address',
  teredo: 'a Teredo tunnel address',
  ipv4_compatible: 'a deprecated IPv4-compatible IPv6 address',
  not_global: 'a non-global IPv6 address',
};

/**
 * Refused even when an operator allows the host or a CIDR containing it: nothing legitimate is
 * fetched from them, and they are the classic SSRF targets (0.0.0.0 reaches the local host on
 * Linux; the metadata services hand out cloud credentials).
 */
const NEVER_ALLOWED = new Set<AddressCategory>(['metadata', 'unspecified', 'multicast', 'broadcast']);

const cidr = (text: string, category: AddressCategory) => ({ range: ipaddr.parseCIDR(text), category });

// Most specific first: the first match wins.
const IPV4_TABLE = [
  cidr('169.254.169.254/32', 'metadata'), // AWS, GCP, Azure, OCI, DigitalOcean
  cidr('169.254.170.2/32', 'metadata'), // AWS ECS task credentials
  cidr('100.100.100.200/32', 'metadata'), // Alibaba Cloud
  cidr('0.0.0.0/8', 'unspecified'),
  cidr('10.0.0.0/8', 'private'),
  cidr('100.64.0.0/10', 'carrier_grade_nat'),
  cidr('127.0.0.0/8', 'loopback'),
  cidr('169.254.0.0/16', 'link_local'),
  cidr('172.16.0.0/12', 'private'),
  cidr('192.0.0.0/24', 'protocol_assignment'),
  cidr('192.0.2.0/24', 'documentation'),
  cidr('192.88.99.0/24', 'reserved'), // retired 6to4 relay anycast
  cidr('192.168.0.0/16', 'private'),
  cidr('198.18.0.0/15', 'benchmarking'),
  cidr('198.51.100.0/24', 'documentation'),
  cidr('203.0.113.0/24', 'documentation'),
  cidr('224.0.0.0/4', 'multicast'),
  cidr('255.255.255.255/32', 'broadcast'),
  cidr('240.0.0.0/4', 'reserved'),
];

const IPV6_TABLE = [
  cidr('fd00:ec2::254/128', 'metadata'), // AWS IMDS over IPv6
  cidr('::/128', 'unspecified'),
  cidr('::1/128', 'loopback'),
  cidr('100::/64', 'reserved'), // discard-only
  cidr('2001::/32', 'teredo'),
  cidr('2001:db8::/32', 'documentation'),
  cidr('3fff::/20', 'documentation'),
  cidr('2001:2::/48', 'benchmarking'),
  cidr('2001::/23', 'protocol_assignment'),
  cidr('fc00::/7', 'unique_local'),
  cidr('fe80::/10', 'link_local'),
  cidr('fec0::/10', 'site_local'),
  cidr('ff00::/8', 'multicast'),
];

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const MAPPED = ipaddr.parseCIDR('::ffff:0:0/96');
const COMPATIBLE = ipaddr.parseCIDR('::/96');
const TRANSLATED = ipaddr.parseCIDR('::ffff:0:0:0/96'); // RFC 6145
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
const NAT64_LOCAL = ipaddr.parseCIDR('64:ff9b:1::/48');
const SIX_TO_FOUR = ipaddr.parseCIDR('2002::/16');

function lookup(ip: IP, table: typeof IPV4_TABLE): AddressCategory | undefined {
  for (const { range, category } of table) {
    if (range[0].kind() === ip.kind() && ip.match(range)) return category;
  }
  return undefined;
}

const lastIPv4 = (v6: ipaddr.IPv6) => new ipaddr.IPv4(v6.toByteArray().slice(12, 16));

function categoryV4(ip: ipaddr.IPv4): AddressCategory {
  const found = lookup(ip, IPV4_TABLE);
  if (found) return found;
  // ipaddr.js knows a few more special ranges (AS112, AMT); nothing to fetch there either.
  return ip.range() === 'unicast' ? 'public' : 'reserved';
}

function categoryV6(ip: ipaddr.IPv6): AddressCategory {
  // IPv6 forms that carry an IPv4 address are judged by that address: the kernel or a
  // translator delivers them to it.
  if (ip.match(MAPPED)) return categoryV4(lastIPv4(ip));
  if (ip.match(NAT64)) return categoryV4(lastIPv4(ip));
  if (ip.match(SIX_TO_FOUR)) return categoryV4(new ipaddr.IPv4(ip.toByteArray().slice(2, 6)));
  // Deprecated carriers: refused whatever they embed, but named by a bad embedded address.
  if (ip.match(TRANSLATED) || ip.match(NAT64_LOCAL) || (ip.match(COMPATIBLE) && !isTrivial(ip))) {
    const inner = categoryV4(lastIPv4(ip));
    return inner === 'public' ? 'ipv4_compatible' : inner;
  }
  const found = lookup(ip, IPV6_TABLE);
  if (found) return found;
  if (!ip.match(GLOBAL_UNICAST_V6)) return 'not_global';
  return ip.range() === 'unicast' ? 'public' : 'reserved';
}

/** `::` and `::1` sit inside ::/96 but are their own categories. */
const isTrivial = (ip: ipaddr.IPv6) => ip.parts.slice(0, 7).every((p) => p === 0) && (ip.parts[7] ?? 0) <= 1;

/** Parses an IP literal in any form ipaddr.js accepts (dotted, octal, hex, long, IPv6); null if not one. */
export function parseAddress(text: string): IP | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (ipaddr.IPv4.isValid(bare)) return ipaddr.IPv4.parse(bare);
  const v6 = withHexTail(bare);
  if (v6 !== null && ipaddr.IPv6.isValid(v6)) return ipaddr.IPv6.parse(v6);
  return null;
}

/**
 * ipaddr.js reads any dotted tail as IPv4-mapped (`::8.8.8.8` becomes `::ffff:8.8.8.8`), so the
 * tail is rewritten as two hex groups first and the address keeps its real prefix.
 */
function withHexTail(text: string): string | null {
  const match = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (!match) return text;
  const [, head = '', quad = ''] = match;
  if (!ipaddr.IPv4.isValidFourPartDecimal(quad)) return null;
  const [a = 0, b = 0, c = 0, d = 0] = quad.split('.').map(Number);
  return `${head}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** The form to connect to: IPv4-mapped addresses as plain IPv4, so hosts without IPv6 reach them. */
export function connectAddress(ip: IP): string {
  return unmapped(ip).toString();
}

export function addressCategory(ip: IP): AddressCategory {
  return ip.kind() === 'ipv4' ? categoryV4(ip as ipaddr.IPv4) : categoryV6(ip as ipaddr.IPv6);
}

/** The IPv4 address behind an IPv4-mapped IPv6 address, so `::ffff:10.0.0.1` matches `10.0.0.0/8`. */
function unmapped(ip: IP): IP {
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

/** URL_FETCH_ALLOWED_PRIVATE_HOSTS, parsed once. */
export interface AllowList {
  /** Normalised host names (lower case, no trailing dot). */
  readonly names: ReadonlySet<string>;
  readonly ranges: ReadonlyArray<[IP, number]>;
}

export const EMPTY_ALLOW_LIST: AllowList = { names: new Set(), ranges: [] };

/** Lower case, no trailing dots, no IPv6 brackets. */
export function normaliseHostname(host: string): string {
  let h = host.trim().toLowerCase().replace(/\.+$/, '');
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return h;
}

/**
 * Entries are host names (exact, case-insensitive), CIDRs (`10.0.0.0/8`, `fd00::/8`) or single
 * addresses. A malformed CIDR throws, so a typo fails at start-up rather than silently allowing
 * nothing (or too much).
 */
export function parseAllowList(entries: readonly string[]): AllowList {
  const names = new Set<string>();
  const ranges: Array<[IP, number]> = [];
  for (const raw of entries) {
    const entry = raw.trim();
    if (!entry) continue;
    if (entry.includes('/')) {
      if (!ipaddr.isValidCIDR(entry)) {
        throw new Error(`URL_FETCH_ALLOWED_PRIVATE_HOSTS: "${entry}" is not a valid CIDR`);
      }
      const [ip, bits] = ipaddr.parseCIDR(entry);
      ranges.push([unmapped(ip), ip.kind() === 'ipv6' && unmapped(ip).kind() === 'ipv4' ? bits - 96 : bits]);
      continue;
    }
    const ip = parseAddress(entry);
    if (ip) {
      const plain = unmapped(ip);
      ranges.push([plain, plain.kind() === 'ipv4' ? 32 : 128]);
      continue;
    }
    const name = normaliseHostname(entry);
    if (!/^[a-z0-9_.-]+$/.test(name)) {
      throw new Error(`URL_FETCH_ALLOWED_PRIVATE_HOSTS: "${entry}" is neither a host name nor a CIDR`);
    }
    names.add(name);
  }
  return { names, ranges };
}

export type AddressVerdict = { allowed: true } | { allowed: false; category: AddressCategory };

/**
 * Whether a connection to `ip` may be made. `hostAllowed` is true when the URL's host name is
 * listed by name in the allow list: then any address it resolves to is accepted (except the
 * NEVER_ALLOWED categories); otherwise a non-public address must lie in an allowed CIDR.
 */
export function checkAddress(ip: IP, allow: AllowList, hostAllowed = false): AddressVerdict {
  const category = addressCategory(ip);
  if (category === 'public') return { allowed: true };
  if (NEVER_ALLOWED.has(category)) return { allowed: false, category };
  if (hostAllowed) return { allowed: true };
  const plain = unmapped(ip);
  for (const range of allow.ranges) {
    if (range[0].kind() === plain.kind() && plain.match(range)) return { allowed: true };
  }
  return { allowed: false, category };
}
