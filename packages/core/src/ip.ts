import { optionErrorCode, PortcullisConfigError } from './errors.js';
/*
 * The one place that parses IP addresses. Strict on purpose: the key of a client must not depend on
 * how an attacker chose to spell its address, so every accepted spelling maps to one canonical form,
 * and every ambiguous spelling (octal, hex, short IPv4) is refused rather than guessed.
 */

/**
 * A parsed address: IPv4 as one 32-bit number, IPv6 as eight 16-bit groups. An IPv4 address that
 * was written in its canonical form keeps that text, so formatting it allocates nothing.
 */
export type ParsedIp =
  | { readonly v: 4; readonly n: number; readonly text: string | undefined }
  | { readonly v: 6; readonly g: readonly number[] };

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;
const MAX_TEXT = 100;

/**
 * Strict dotted-quad IPv4: four decimal parts of 0–255 without leading zeros, so the only accepted
 * spelling of an address is its canonical one, and the value (0 to 2^32 − 1) maps back to exactly
 * that text. A character scan rather than a regular expression: this runs once per request on the
 * hot path and allocates nothing.
 */
export function parseV4(text: string): number | undefined {
  const len = text.length;
  if (len < 7 || len > 15) return undefined;
  let n = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || dots === 3) return undefined;
      n = n * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      // A second digit after a leading 0 is an octal-looking spelling: refused, never guessed.
      if (digits === 1 && part === 0) return undefined;
      part = part * 10 + (c - 48);
      if (part > 255) return undefined;
      digits++;
    } else {
      return undefined;
    }
  }
  if (dots !== 3 || digits === 0) return undefined;
  return n * 256 + part;
}

function parseGroups(part: string, out: number[], allowV4Tail: boolean): boolean {
  if (part === '') return true;
  const pieces = part.split(':');
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i] as string;
    if (allowV4Tail && i === pieces.length - 1 && piece.includes('.')) {
      const n = parseV4(piece);
      if (n === undefined) return false;
      out.push(n >>> 16, n & 0xffff);
    } else if (HEX_GROUP.test(piece)) {
      out.push(Number.parseInt(piece, 16));
    } else {
      return false;
    }
  }
  return true;
}

function parseV6(text: string): number[] | undefined {
  const zone = text.indexOf('%');
  // A zone id names an interface, not a host: it must not split one client into many buckets.
  const body = zone === -1 ? text : zone === text.length - 1 ? '' : text.slice(0, zone);
  if (body === '' || !body.includes(':')) return undefined;
  const gap = body.indexOf('::');
  if (gap !== -1 && body.indexOf('::', gap + 1) !== -1) return undefined;
  if (gap === -1) {
    const groups: number[] = [];
    if (!parseGroups(body, groups, true) || groups.length !== 8) return undefined;
    return groups;
  }
  const head: number[] = [];
  const tail: number[] = [];
  const left = body.slice(0, gap);
  const right = body.slice(gap + 2);
  if (!parseGroups(left, head, false) || !parseGroups(right, tail, true)) return undefined;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return undefined;
  return [...head, ...new Array<number>(missing).fill(0), ...tail];
}

/** Parses a bare IPv4 or IPv6 address (no brackets, no port). IPv4-mapped IPv6 becomes IPv4. */
export function parseIp(text: string): ParsedIp | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_TEXT) return undefined;
  const v4 = parseV4(text);
  if (v4 !== undefined) return { v: 4, n: v4, text };
  // How a dual-stack Node server reports every IPv4 client: read without the general parse (split,
  // regular expressions, arrays), which cost about 600 ns a new client. Same answer: `parseV4`
  // takes only the canonical spelling, which is what formatting the number gives back.
  if (text.startsWith('::ffff:')) {
    const tail = text.slice(7);
    const n = parseV4(tail);
    if (n !== undefined) return { v: 4, n, text: tail };
  }
  const g = parseV6(text);
  if (!g) return undefined;
  // ::ffff:0:0/96 decided by bits, so every spelling of a mapped address is the IPv4 client.
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return { v: 4, n: (((g[6] as number) << 16) | (g[7] as number)) >>> 0, text: undefined };
  }
  return { v: 6, g };
}

function formatV4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

function formatV6(g: readonly number[]): string {
  // RFC 5952: compress the longest run (≥ 2) of zero groups, the first on a tie; lower-case hex.
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) =>
    g
      .slice(from, to)
      .map((x) => x.toString(16))
      .join(':');
  if (bestStart === -1) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLen, 8)}`;
}

/** Formats a parsed address canonically (dotted IPv4; RFC 5952 IPv6). */
export function formatIp(ip: ParsedIp): string {
  return ip.v === 4 ? (ip.text ?? formatV4(ip.n)) : formatV6(ip.g);
}

/**
 * Canonicalises an IP address: IPv4 as four-part dotted decimal, IPv6 lower-case and compressed
 * (RFC 5952), IPv4-mapped IPv6 as IPv4, zone ids dropped. Returns `undefined` for anything that is
 * not an address (including hex, octal and short IPv4 such as `0x7f.0.0.1` or `127.1`).
 * @example normalizeIp('::FFFF:127.0.0.1') // '127.0.0.1'
 */
export function normalizeIp(value: string): string | undefined {
  const parsed = parseIp(value);
  return parsed ? formatIp(parsed) : undefined;
}

function parsedIsLoopback(ip: ParsedIp): boolean {
  if (ip.v === 4) return ip.n >>> 24 === 127;
  const g = ip.g;
  return (
    g[7] === 1 &&
    g[0] === 0 &&
    g[1] === 0 &&
    g[2] === 0 &&
    g[3] === 0 &&
    g[4] === 0 &&
    g[5] === 0 &&
    g[6] === 0
  );
}

/** True for `127.0.0.0/8`, `::1` and their IPv4-mapped forms; false for anything else or junk. */
export function isLoopback(value: string): boolean {
  const parsed = parseIp(value);
  return parsed !== undefined && parsedIsLoopback(parsed);
}

/**
 * The bucket key of a canonical address: IPv4 as is; IPv6 truncated to its `/subnet` network
 * (`2001:db8:1:2::/64`) unless `subnet` is false or 128, because one IPv6 host usually owns a /64.
 */
export function subnetKey(ip: ParsedIp, subnet: number | false): string {
  if (ip.v === 4 || subnet === false || subnet >= 128) return formatIp(ip);
  const carried = embeddedV4(ip.g);
  if (carried !== undefined) return formatV4(carried);
  return `${formatV6(maskV6(ip.g, subnet))}/${subnet}`;
}

/**
 * The key of the `/prefix` network around an IPv6 address (`2001:db8:1::/48`), or undefined for
 * an address that is keyed by an IPv4 one (IPv4, or IPv6 carrying an IPv4 address): its networks
 * are not IPv6 networks.
 */
export function networkKey(ip: ParsedIp, prefix: number): string | undefined {
  if (ip.v === 4 || embeddedV4(ip.g) !== undefined) return undefined;
  return `${formatV6(maskV6(ip.g, prefix))}/${prefix}`;
}

/**
 * The IPv4 address an IPv6 one carries when it is a translation of it, and so is that IPv4 client:
 * NAT64's well-known prefix (`64:ff9b::/96`, RFC 6052: the last 32 bits), 6to4 (`2002::/16`, RFC
 * 3056: the 32 bits after the prefix) and Teredo (`2001::/32`, RFC 4380: the last 32 bits, inverted).
 * Cut to a /64 they would share one bucket per translator (every NAT64 client, every client of one
 * Teredo server) or let one IPv4 host rotate through 65 536 networks (6to4).
 */
export function embeddedV4(g: readonly number[]): number | undefined {
  const g0 = g[0] as number;
  const g1 = g[1] as number;
  if (g0 === 0x2002) return ((g1 << 16) | (g[2] as number)) >>> 0;
  const low = (((g[6] as number) << 16) | (g[7] as number)) >>> 0;
  if (g0 === 0x2001 && g1 === 0) return ~low >>> 0;
  if (g0 === 0x64 && g1 === 0xff9b && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0)
    return low;
  return undefined;
}

/**
 * The rate-limit key of a client address, as every Portcullis limiter builds it: IPv4 canonical,
 * IPv6 by its `/ipv6Subnet` network (default `/64`, because one host usually owns a whole /64 and
 * could otherwise rotate through it), `false` keeps the full IPv6 address. Returns `undefined` for
 * anything that is not an address, so a caller can choose its own fallback bucket.
 * @example ipKey('2001:db8:1:2:aaaa::1') // '2001:db8:1:2::/64'
 * @example ipKey('::ffff:10.0.0.1') // '10.0.0.1'
 */
export function ipKey(ip: string, ipv6Subnet: number | false = 64): string | undefined {
  if (
    ipv6Subnet !== false &&
    (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128)
  ) {
    throw new PortcullisConfigError(
      optionErrorCode('ipv6Subnet'),
      'ipv6Subnet',
      `Portcullis: ipv6Subnet must be an integer from 1 to 128 or false, got ${String(ipv6Subnet)}`,
    );
  }
  const parsed = parseIp(ip);
  return parsed === undefined ? undefined : subnetKey(parsed, ipv6Subnet);
}

function maskV6(g: readonly number[], prefix: number): number[] {
  return g.map((x, i) => {
    const bits = Math.min(16, Math.max(0, prefix - i * 16));
    return bits === 0 ? 0 : x & (0xffff << (16 - bits)) & 0xffff;
  });
}

/** A parsed trusted-proxy entry: an address or a CIDR network. */
export interface Cidr {
  readonly ip: ParsedIp;
  readonly prefix: number;
}

/**
 * Parses `1.2.3.4`, `10.0.0.0/8`, `2001:db8::/32`. Returns undefined for junk and for a zero-length
 * prefix (trusting every address is never what a caller means).
 */
export function parseCidr(text: string): Cidr | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  const addr = slash === -1 ? text : text.slice(0, slash);
  const ip = parseIp(addr);
  if (!ip) return undefined;
  // An IPv4-mapped network (`::ffff:10.0.0.0/104`) is the IPv4 network with 96 fewer bits.
  const mapped = ip.v === 4 && addr.includes(':');
  const max = ip.v === 4 ? 32 : 128;
  if (slash === -1) return { ip, prefix: max };
  const bits = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return undefined;
  let prefix = Number(bits);
  if (mapped) prefix -= 96;
  if (prefix < 1 || prefix > max) return undefined;
  return { ip, prefix };
}

/** True when `ip` lies within `cidr`. */
export function cidrContains(cidr: Cidr, ip: ParsedIp): boolean {
  const net = cidr.ip;
  if (net.v !== ip.v) return false;
  if (net.v === 4 && ip.v === 4) {
    const mask = cidr.prefix === 32 ? 0xffffffff : ~(0xffffffff >>> cidr.prefix);
    return ((net.n ^ ip.n) & mask) === 0;
  }
  const a = maskV6((net as { g: readonly number[] }).g, cidr.prefix);
  const b = maskV6((ip as { g: readonly number[] }).g, cidr.prefix);
  return a.every((x, i) => x === b[i]);
}

/** Loopback test on an already parsed address (avoids a second parse on the hot path). */
export { parsedIsLoopback };

/**
 * Parses one entry of a forwarding header: a bare address, `[v6]`, `[v6]:port` or `v4:port`.
 * Anything else is malformed (undefined).
 */
export function parseHeaderAddress(raw: string): ParsedIp | undefined {
  const text = raw.trim();
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close === -1) return undefined;
    const rest = text.slice(close + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    const inner = parseIp(text.slice(1, close));
    return inner;
  }
  const colon = text.indexOf(':');
  if (colon !== -1 && colon === text.lastIndexOf(':')) {
    // Exactly one colon: IPv4 with a port (an IPv6 address has at least two).
    if (!/^:\d{1,5}$/.test(text.slice(colon))) return undefined;
    const v4 = parseIp(text.slice(0, colon));
    return v4?.v === 4 ? v4 : undefined;
  }
  return parseIp(text);
}
