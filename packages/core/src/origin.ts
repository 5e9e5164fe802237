import { getDomain } from 'tldts';

/** Longest Origin header value that is parsed at all; longer ones share the invalid bucket. */
export const MAX_ORIGIN_LENGTH = 2048;

const PREFIX = 'browser-origin:';
const NULL_KEY = 'browser-origin:null';
const INVALID_KEY = 'browser-origin:invalid';

/**
 * The browser bucket key of an `Origin` header value: `browser-origin:` + the WHATWG serialised
 * origin (lower-case scheme and host, default port dropped, IDN as punycode). Opaque origins are
 * keyed by their own normalised text, so a sandboxed page (`null`) cannot lock out an extension
 * (`browser-origin:chrome-extension://<id>`): lower-case scheme, plus `//host` when there is one,
 * never a path. An unparseable, over-long (> 2 KiB) or repeated header (an array, or a comma-joined
 * value) shares `browser-origin:invalid`. Never throws.
 * @example normalizeOrigin('HTTPS://Example.COM:443') // 'browser-origin:https://example.com'
 * @example normalizeOrigin('chrome-extension://abcdefghijklmnop') // 'browser-origin:chrome-extension://abcdefghijklmnop'
 */
export function normalizeOrigin(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_ORIGIN_LENGTH) return INVALID_KEY;
  // A serialised origin never holds a comma: a comma means the header was sent more than once.
  if (value.includes(',')) return INVALID_KEY;
  const text = value.trim();
  if (text === 'null') return NULL_KEY;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return INVALID_KEY;
  }
  const origin = url.origin;
  if (origin !== 'null') return `${PREFIX}${origin}`;
  // Opaque: the origin serialises as "null" for every such URL, which would put unrelated callers
  // in one bucket. The scheme and host identify the caller; a path would let one caller mint keys.
  const host = url.host.toLowerCase();
  return `${PREFIX}${url.protocol.toLowerCase()}${host === '' ? '' : `//${host}`}`;
}

/** `host` without its trailing dots (a loop: a regular expression would backtrack on a long run). */
function withoutTrailingDots(host: string): string {
  let end = host.length;
  while (end > 1 && host.charCodeAt(end - 1) === 0x2e) end--;
  return end === host.length ? host : host.slice(0, end);
}

const TUPLE = /^(?:https?|wss?|ftp):\/\/(\[[0-9a-f:.]+\]|[^/:[\]]+)(?::\d+)?$/;

/**
 * The site of a browser bucket key (from {@link normalizeOrigin}): the registrable domain of its
 * host, from the Public Suffix List (private suffixes included, so `a.github.io` and `b.github.io`
 * are two sites), ignoring scheme, port and trailing dots (`a.example.` is `a.example`). An IP
 * literal is its own site; `localhost` and its subdomains, fully qualified or not, are one site; a
 * host with no registrable domain is its own site; an opaque or invalid origin is its own site. One
 * site is one attacker: its subdomains share one budget.
 * @example originSite('browser-origin:https://s7.evil.example') // 'evil.example'
 */
export function originSite(originKey: string): string {
  const origin = originKey.startsWith(PREFIX) ? originKey.slice(PREFIX.length) : originKey;
  const tuple = TUPLE.exec(origin);
  if (tuple === null) return origin;
  // A trailing dot spells the same host fully qualified (`p0.localhost.` is `p0.localhost`); the
  // origin keeps it (it is another origin to a browser), the site must not, or each dotted
  // subdomain would be a site of its own.
  const host = withoutTrailingDots(tuple[1] as string);
  if (host.startsWith('[') || /^[0-9.]+$/.test(host)) return host;
  if (host === 'localhost' || host.endsWith('.localhost')) return 'localhost';
  return getDomain(host, { allowPrivateDomains: true, validateHostname: false }) ?? host;
}
