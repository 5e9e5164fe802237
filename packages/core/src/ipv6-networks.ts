import { PortcullisConfigError } from './errors.js';
import { networkKey, type ParsedIp, parsedIsLoopback } from './ip.js';

/**
 * One IPv6 network budget of the `ipv6Networks` option: every client in the same `/prefix` network
 * shares a budget of `factor` times one client's (docs/design.md#ipv6-networks).
 */
export interface Ipv6Network {
  /** The network's prefix length: wider than the client key's (`ipv6Subnet`), from 16 to 127. */
  readonly prefix: number;
  /** The network's budget as a multiple of one client's (an integer from 1 to 1 000 000). */
  readonly factor: number;
}

/**
 * The networks of `ipv6Networks: true`: a /56 (a home or small site: 256 /64s, of which few are
 * in use at once) with 4 clients' budget, and a /48 (one organisation) with 16.
 */
export const DEFAULT_IPV6_NETWORKS: readonly Ipv6Network[] = Object.freeze([
  Object.freeze({ prefix: 56, factor: 4 }),
  Object.freeze({ prefix: 48, factor: 16 }),
]);

const MAX_NETWORKS = 4;

/** The option check of `ipv6Networks`: `true`, `false`, or 1 to 4 `{ prefix, factor }`, narrowest first. */
export function ipv6NetworksOption(
  value: unknown,
  fail: (expected: string) => never,
): readonly Ipv6Network[] | false {
  if (value === true) return DEFAULT_IPV6_NETWORKS;
  if (value === false) return false;
  const expected = `true, false or an array of 1 to ${MAX_NETWORKS} { prefix: 16–127, factor: 1–1000000 } with distinct prefixes`;
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_NETWORKS) fail(expected);
  const out: Ipv6Network[] = [];
  for (const entry of value as unknown[]) {
    if (entry === null || typeof entry !== 'object') fail(expected);
    const { prefix, factor, ...rest } = entry as Record<string, unknown>;
    if (Object.keys(rest).length > 0) fail(expected);
    if (!Number.isInteger(prefix) || (prefix as number) < 16 || (prefix as number) > 127)
      fail(expected);
    if (!Number.isInteger(factor) || (factor as number) < 1 || (factor as number) > 1_000_000)
      fail(expected);
    if (out.some((n) => n.prefix === prefix)) fail(expected);
    out.push(Object.freeze({ prefix: prefix as number, factor: factor as number }));
  }
  // Narrowest first: a request refused by its /56 does not spend its /48's budget.
  return Object.freeze(out.sort((a, b) => b.prefix - a.prefix));
}

/**
 * Refuses networks that are not wider than the client key: a /64 budget over clients keyed by
 * their /64 would be a second copy of each client's own.
 * @throws {PortcullisConfigError} `ERR_PORTCULLIS_IPV6_NETWORKS`
 */
export function checkNetworksWider(
  networks: readonly Ipv6Network[],
  ipv6Subnet: number | false,
  where: string,
): void {
  const client = ipv6Subnet === false ? 128 : ipv6Subnet;
  const narrow = networks.find((n) => n.prefix >= client);
  if (narrow !== undefined)
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_IPV6_NETWORKS',
      'ipv6Networks',
      `${where}: an ipv6Networks prefix must be shorter than the client's (ipv6Subnet ${client}), got /${narrow.prefix}`,
    );
}

/**
 * The network keys of a client address, one per network in `networks` order; undefined for a
 * client that has no IPv6 networks: not an address, IPv4, IPv6 carrying an IPv4 address, or
 * loopback (local clients are exempt or keyed by their browser origin, never by `::/56`).
 */
export function networkKeysOf(
  ip: ParsedIp | undefined,
  networks: readonly Ipv6Network[],
): string[] | undefined {
  if (ip === undefined || ip.v === 4 || parsedIsLoopback(ip)) return undefined;
  const keys: string[] = [];
  for (const n of networks) {
    const key = networkKey(ip, n.prefix);
    if (key === undefined) return undefined;
    keys.push(key);
  }
  return keys;
}
