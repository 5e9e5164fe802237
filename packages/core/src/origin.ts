/** Longest Origin header value that is parsed at all; longer ones share the invalid bucket. */
export const MAX_ORIGIN_LENGTH = 2048;

const NULL_KEY = 'browser-origin:null';
const INVALID_KEY = 'browser-origin:invalid';

/**
 * The browser bucket key of an `Origin` header value: `browser-origin:` + the WHATWG serialised
 * origin (lower-case scheme and host, default port dropped, IDN as punycode). Opaque origins
 * (`null`, `file:`, extensions) share `browser-origin:null`; an unparseable, over-long (> 2 KiB) or
 * repeated header (an array, or a comma-joined value) shares `browser-origin:invalid`. Never throws.
 * @example normalizeOrigin('HTTPS://Example.COM:443') // 'browser-origin:https://example.com'
 */
export function normalizeOrigin(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_ORIGIN_LENGTH) return INVALID_KEY;
  // A serialised origin never holds a comma: a comma means the header was sent more than once.
  if (value.includes(',')) return INVALID_KEY;
  const text = value.trim();
  if (text === 'null') return NULL_KEY;
  let origin: string;
  try {
    origin = new URL(text).origin;
  } catch {
    return INVALID_KEY;
  }
  return origin === 'null' ? NULL_KEY : `browser-origin:${origin}`;
}
