// How a request is keyed, for every gate that keys requests (`rateLimit`, `concurrency`): the same
// option checks, the same default key and the same check of what a `key` function returned.
import { type ClientAddress, compileClientRules, type RawRequest } from '../client.js';
import { subnetKey } from '../ip.js';
import { either, func, integer, oneOf } from '../options.js';
import { gateClientRules, type ParsedClientOptions } from './gate-options.js';

const fn = func as (value: unknown, fail: (expected: string) => never) => never;

/** The options that say how a request is keyed and named, checked alike by every request gate. */
export const requestKeySpec = {
  // A gate's name is a token: it goes into header values, event fields and store keys as written.
  name: (v: unknown, fail: (e: string) => never) =>
    typeof v === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(v)
      ? v
      : fail('a token of 1–64 letters, digits, "_", "." or "-"'),
  key: fn,
  skip: fn,
  ipv6Subnet: either(integer(1, 128), oneOf([false]), 'an integer from 1 to 128 or false'),
};

/** The parsed client address of a request, as a gate's client options resolve it. */
export type ClientAddressOf = (raw: RawRequest) => ClientAddress | undefined;

/** The address resolver of a gate's client options (one per gate: its warnings are told once). */
export function requestAddress(o: ParsedClientOptions): ClientAddressOf {
  return compileClientRules(gateClientRules(o)).address;
}

/**
 * The default key of a request: its resolved client IP, IPv6 cut to its network (`ipv6Subnet`,
 * /64 by default), `unknown` when it cannot be resolved.
 */
export function requestKeyer(
  o: ParsedClientOptions & { readonly ipv6Subnet?: number | boolean | undefined },
  address: ClientAddressOf = requestAddress(o),
): (raw: RawRequest) => string {
  const subnet = (o.ipv6Subnet ?? 64) as number | false;
  return (raw) => {
    const client = address(raw);
    if (client === undefined) return 'unknown';
    // IPv4 keys are the canonical text already; IPv6 ones are cut to their network.
    return client.ip.v === 4 ? client.text : subnetKey(client.ip, subnet);
  };
}

/** What a user's `key(req)` returned, when it is a string; a bug in it throws, loudly. */
export function checkKey(key: unknown): string {
  if (typeof key === 'string') return key;
  throw new TypeError(`Portcullis: key(req) must return a string, got ${typeof key}`);
}
