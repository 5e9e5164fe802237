import { PortcullisConfigError } from '../errors.js';
import { type Cidr, formatIp, parseCidr, type ParsedIp } from '../ip.js';
import { normalizeOrigin } from '../origin.js';

/** What a rule of an access list is about. */
export type AccessKind = 'ip' | 'account' | 'origin';

/**
 * The subject of an access rule, as a caller writes it: `'203.0.113.0/24'`, `'2001:db8::/32'`,
 * `'ip:10.0.0.1'`, `'account:alice'`, `'origin:https://app.example'`, or the same as an object
 * (`{ ip }`, `{ account }`, `{ origin }`).
 */
export type AccessSubjectInput =
  | string
  | { readonly ip: string }
  | { readonly account: string }
  | { readonly origin: string };

/** A subject in its one canonical spelling (`ip:10.0.0.0/8`), and what it matches. */
export type AccessSubject =
  | { readonly kind: 'ip'; readonly text: string; readonly cidr: Cidr }
  | { readonly kind: 'account'; readonly text: string }
  | { readonly kind: 'origin'; readonly text: string };

/** The code of every refusal of a subject, a reason or a duration of an access rule. */
export const ACCESS_RULE_ERROR = 'ERR_PORTCULLIS_ACCESS_RULE';

/** Longest account name a rule takes: the auth layers key longer ones as `account:invalid`. */
const MAX_ACCOUNT = 256;
/** Longest reason kept with a rule: it goes into refusals and log lines. */
export const MAX_REASON = 200;
/** Control characters and lone surrogates: never in a subject or a reason (logs stay clean). */
const UNSAFE = /[\p{Cc}\p{Surrogate}]/u;

function refuse(message: string, option = 'subject'): never {
  throw new PortcullisConfigError(ACCESS_RULE_ERROR, option, `access list: ${message}`);
}

/** The network `cidr` names, host bits cleared, so `10.1.2.3/8` and `10.0.0.0/8` are one rule. */
function masked(cidr: Cidr): Cidr {
  const { ip, prefix } = cidr;
  if (ip.v === 4) {
    const mask = prefix === 32 ? 0xffffffff : ~(0xffffffff >>> prefix);
    return { ip: { v: 4, n: (ip.n & mask) >>> 0, text: undefined }, prefix };
  }
  const g = ip.g.map((x, i) => {
    const bits = Math.min(16, Math.max(0, prefix - i * 16));
    return bits === 0 ? 0 : x & (0xffff << (16 - bits)) & 0xffff;
  });
  return { ip: { v: 6, g } as ParsedIp, prefix };
}

function ipSubject(text: string): AccessSubject {
  const parsed = typeof text === 'string' ? parseCidr(text.trim()) : undefined;
  if (parsed === undefined)
    refuse(
      `${JSON.stringify(String(text).slice(0, 64))} is not an IP address or CIDR network (e.g. 203.0.113.7, 10.0.0.0/8, 2001:db8::/32)`,
    );
  const cidr = masked(parsed);
  const full = cidr.ip.v === 4 ? 32 : 128;
  const address = formatIp(cidr.ip);
  return {
    kind: 'ip',
    text: `ip:${cidr.prefix === full ? address : `${address}/${cidr.prefix}`}`,
    cidr,
  };
}

function accountSubject(name: unknown): AccessSubject {
  if (
    typeof name !== 'string' ||
    name.length === 0 ||
    name.length > MAX_ACCOUNT ||
    UNSAFE.test(name)
  )
    refuse(
      `an account must be 1 to ${MAX_ACCOUNT} characters without control characters, as the auth guard's account() returns it`,
    );
  return { kind: 'account', text: `account:${name}` };
}

function originSubject(value: unknown): AccessSubject {
  const key = normalizeOrigin(value);
  if (key === 'browser-origin:invalid')
    refuse(
      `${JSON.stringify(String(value).slice(0, 64))} is not an origin (scheme://host[:port], or null)`,
    );
  return { kind: 'origin', text: `origin:${key.slice('browser-origin:'.length)}` };
}

/**
 * The canonical subject of `input`: an address or network by its masked network (IPv4-mapped
 * spellings are the IPv4 one), an account as written, an origin as browsers serialise it.
 * @throws {PortcullisConfigError} `ERR_PORTCULLIS_ACCESS_RULE` for anything else
 */
export function accessSubject(input: AccessSubjectInput): AccessSubject {
  if (typeof input === 'string') {
    if (input.startsWith('account:')) return accountSubject(input.slice('account:'.length));
    if (input.startsWith('origin:')) return originSubject(input.slice('origin:'.length));
    return ipSubject(input.startsWith('ip:') ? input.slice(3) : input);
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    refuse('a subject is a string or one of { ip }, { account }, { origin }');
  const keys = Object.keys(input);
  const [only] = keys;
  if (keys.length !== 1 || (only !== 'ip' && only !== 'account' && only !== 'origin'))
    refuse('a subject object holds exactly one of ip, account, origin');
  const value = (input as Record<string, unknown>)[only];
  if (only === 'account') return accountSubject(value);
  if (only === 'origin') return originSubject(value);
  if (typeof value !== 'string') refuse('ip must be a string');
  return ipSubject(value);
}

/**
 * A subject read back from a store, which another process (or version) wrote: undefined when it
 * is no subject, so that one bad entry never stops the list from loading.
 */
export function storedSubject(text: string): AccessSubject | undefined {
  try {
    const s = accessSubject(text);
    return s.text === text ? s : undefined;
  } catch {
    return undefined;
  }
}

/** A rule's reason: a short line of text, `''` when none was given. */
export function accessReason(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value !== 'string' || value.length > MAX_REASON || UNSAFE.test(value))
    refuse(
      `reason must be a string of at most ${MAX_REASON} characters without control characters`,
      'reason',
    );
  return value;
}
